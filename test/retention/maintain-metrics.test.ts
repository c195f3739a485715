import { spawn } from "node:child_process";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyDirectory, json, runCli } from "../cli/run-cli.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { waitFor } from "../support/wait-for.ts";
import { insertAuditRow } from "./support.ts";

// What the maintenance task tells Prometheus: served on /metrics when it runs on a timer (npm start),
// pushed to a Pushgateway after a single run (the CronJob), the figures the alert rules read.

const BIN = fileURLToPath(new URL("../../services/cli/bin/subdata.js", import.meta.url));
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase("maintain_metrics");
  const admin = new pg.Pool({ connectionString: database.adminUrl, max: 1 });
  try {
    await insertAuditRow(admin, "mer_metrics", "2026-11-02T00:00:00Z");
  } finally {
    await admin.end();
  }
});

afterAll(async () => {
  await database?.drop();
});

/** `name{labels} value` lines of a Prometheus text exposition, by name and label text. */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match) continue;
    // The constant component="maintain" label is left out of the key.
    const labels = (match[2] ?? "")
      .slice(1, -1)
      .split(",")
      .filter((label) => label !== "" && label !== 'component="maintain"');
    found.set(`${match[1]}${labels.length ? `{${labels.join(",")}}` : ""}`, Number(match[3]));
  }
  return found;
}

describe("subdata maintain's figures", () => {
  it("on a timer, serves them on /metrics after each run, and stops cleanly on SIGTERM", async () => {
    const child = spawn(process.execPath, [BIN, "maintain", "--every", "1h", "--metrics-port", "0"], {
      cwd: emptyDirectory(),
      env: { PATH: process.env.PATH ?? "", HOME: emptyDirectory(), DATABASE_URL: database.roleUrls.maintain },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const port = await waitFor("the metrics port in the log", () => /"metricsPort":(\d+)/.exec(output)?.[1]);
      await waitFor("the first run", () => output.includes("maintenance run done"));
      const metrics = samples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      const now = Date.now() / 1_000;
      expect(metrics.get("subdata_maintenance_last_success_timestamp_seconds")).toBeGreaterThan(now - 120);
      expect(metrics.get("subdata_maintenance_last_run_failed_steps")).toBe(0);
      expect(metrics.get("subdata_audit_partitions_ahead")).toBe(3);
      expect(metrics.get("subdata_audit_default_partition_rows")).toBe(0);
      expect(metrics.get("subdata_audit_partitions_covered_until_timestamp_seconds")).toBeGreaterThan(now + 59 * 86_400);
      expect(metrics.get('subdata_table_oldest_row_timestamp_seconds{table="audit_events"}')).toBe(Date.parse("2026-11-02T00:00:00Z") / 1_000);
      // An empty table has no oldest row: no series, rather than 1970.
      expect(metrics.has('subdata_table_oldest_row_timestamp_seconds{table="webhook_attempts"}')).toBe(false);
      expect(metrics.get('subdata_table_retention_limit_seconds{table="audit_events"}')).toBe((400 + 31) * 86_400);
      expect(metrics.get('subdata_maintenance_last_run_removed_rows{table="webhook_deliveries"}')).toBe(0);
      // Process metrics too, like every long-lived subdata process.
      expect([...metrics.keys()].some((name) => name.startsWith("process_cpu_seconds_total"))).toBe(true);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(output).toContain("maintenance stopped");
  });

  it("after a single run, pushes them to the Pushgateway, replacing the job's previous figures; a refusal fails the run", async () => {
    const received: Array<{ method: string; url: string; body: string }> = [];
    let answer = 200;
    const gateway = createServer((request: IncomingMessage, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        received.push({ method: request.method ?? "", url: request.url ?? "", body });
        response.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/`;
    try {
      const env = { DATABASE_URL: database.roleUrls.maintain, SUBDATA_PUSHGATEWAY_URL: url };
      const pushed = await runCli(["maintain", "--json"], { env });
      expect(pushed.code, pushed.stderr).toBe(0);
      expect(received).toHaveLength(1);
      expect(received[0]).toMatchObject({ method: "PUT", url: "/metrics/job/subdata_maintain" });
      const metrics = samples(received[0]!.body);
      expect(metrics.get("subdata_audit_partitions_ahead")).toBe(3);
      expect(metrics.get("subdata_maintenance_last_success_timestamp_seconds")).toBeGreaterThan(0);

      answer = 500;
      const refused = await runCli(["maintain", "--json"], { env });
      expect(refused.code).toBe(1);
      expect(json<{ ok: boolean; failures: Array<{ step: string }> }>(refused)).toMatchObject({ ok: false, failures: [{ step: "push metrics" }] });
    } finally {
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    }
  });
});
