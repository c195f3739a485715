import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, runCli } from "../cli/run-cli.ts";
import { adminPool, fixturesOf, type RunningWebhookServer, startWebhookServer } from "./webhook-server.ts";

let server: RunningWebhookServer;
let db: pg.Pool;

beforeAll(async () => {
  db = adminPool();
  server = await startWebhookServer({ allowPrivate: true });
});

afterAll(async () => {
  await server?.stop();
  await db?.end();
});

describe("subdata webhooks (CLI against the in-process service)", () => {
  it("creates an endpoint, printing the secret once, and lists it without the secret", async () => {
    const merchantId = await fixturesOf(db).merchant();
    const env = { SUBDATA_WEBHOOK_URL: server.baseUrl, SUBDATA_CLI_TOKEN: server.tokens.cli };

    const created = await runCli(
      [
        "webhooks",
        "create",
        "--merchant",
        merchantId,
        "--url",
        "http://127.0.0.1:4000/hooks",
        "--events",
        "subscription.created,charge.updated,order.deleted",
        "--json",
      ],
      { env },
    );
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    const createdJson = json<{ endpoint: { id: string; event_types: string[]; status: string }; secret: string }>(created);
    expect(createdJson.secret).toMatch(/^whsec_/);
    expect(createdJson.endpoint).toMatchObject({ status: "ENABLED", event_types: ["subscription.created", "charge.updated", "order.deleted"] });

    const listed = await runCli(["webhooks", "list", "--merchant", merchantId, "--json"], { env });
    expect(listed.code).toBe(0);
    expect(json(listed)).toEqual({ endpoints: [createdJson.endpoint] });
    expect(listed.stdout).not.toContain("whsec_");

    const test = await runCli(["webhooks", "test", createdJson.endpoint.id, "--merchant", merchantId, "--json"], { env });
    expect(test.code).toBe(0);
    const deliveries = await runCli(["webhooks", "deliveries", createdJson.endpoint.id, "--merchant", merchantId, "--json"], { env });
    expect(json<{ deliveries: Array<{ id: string; status: string }> }>(deliveries).deliveries).toEqual([
      expect.objectContaining({ id: json<{ delivery_id: string }>(test).delivery_id, status: "PENDING" }),
    ]);
  });

  it("names the problem when the service refuses the call", async () => {
    const run = await runCli(["webhooks", "list", "--merchant", "mer_x", "--json"], {
      env: { SUBDATA_WEBHOOK_URL: server.baseUrl, SUBDATA_CLI_TOKEN: "not-the-cli-token-not-the-cli-token-at-all" },
    });
    expect(run.code).toBe(1);
    expect(json(run)).toEqual({ error: { code: "config", message: expect.stringContaining("SUBDATA_CLI_TOKEN") } });
  });
});
