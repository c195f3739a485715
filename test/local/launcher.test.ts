import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { writeDevEnvFile } from "../../deploy/local/src/dev-env-file.ts";
import { grpcHealthServing } from "../../deploy/local/src/readiness.ts";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Pids of live processes whose environment carries `marker` (our launcher's children do). */
function processesWithEnv(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(marker)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("npm start (deploy/local) against an existing Postgres and NATS", () => {
  const databaseName = `subdata_local_${inject("runId")}`;
  const serverUrl = new URL(inject("adminDatabaseUrl"));
  serverUrl.pathname = "/postgres";
  const databaseUrl = new URL(serverUrl);
  databaseUrl.pathname = `/${databaseName}`;
  let dataDir: string;
  let launcher: ChildProcess | undefined;
  let output = "";

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${databaseName}`);
    await admin.end();
    dataDir = mkdtempSync(join(tmpdir(), "subdata-local-"));
    // Service roles are cluster-wide: reuse the passwords the run already gave them, so setting
    // them again (as the launcher does) cannot break other test files on a password-checking server.
    const roles = inject("roleDatabaseUrls");
    writeDevEnvFile(
      join(dataDir, "dev.env"),
      {
        SUBDATA_QUERY_DB_PASSWORD: decodeURIComponent(new URL(roles.query).password),
        SUBDATA_AUTH_DB_PASSWORD: decodeURIComponent(new URL(roles.auth).password),
        SUBDATA_WEBHOOK_DB_PASSWORD: decodeURIComponent(new URL(roles.webhook).password),
      },
      [],
    );
  });

  afterAll(async () => {
    if (launcher && launcher.exitCode === null) launcher.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
    await admin.end();
  });

  it("starts every built service, answers health checks, and stops them all on SIGTERM with exit 0", async () => {
    const ports = { QUERY_PORT: await freePort(), AUTH_PORT: await freePort(), WEBHOOK_PORT: await freePort(), RELAY_HEALTH_PORT: await freePort(), GATEWAY_PORT: await freePort(), GATEWAY_METRICS_PORT: "0", QUERY_METRICS_PORT: "0", AUTH_METRICS_PORT: "0", WEBHOOK_METRICS_PORT: "0" };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl.toString(),
      NATS_URL: inject("natsUrl"),
      SUBDATA_DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
      ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    };
    launcher = spawn(process.execPath, ["--import", "tsx", "deploy/local/src/main.ts"], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    launcher.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    launcher.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => launcher?.once("exit", (code) => resolve(code)));

    await until("the ready line", () => output.includes("subdata is ready") || launcher?.exitCode !== null, 100_000);
    expect(output, output).toContain("subdata is ready");

    const dev = readFileSync(join(dataDir, "dev.env"), "utf8");
    expect(dev).toContain(`SUBDATA_QUERY_URL=http://127.0.0.1:${ports.QUERY_PORT}`);
    const token = /^SUBDATA_SERVICE_TOKEN=(.+)$/m.exec(dev)?.[1] ?? "";
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(output).not.toContain(token);

    // The launcher works at every stage of the project: a service not written yet is skipped.
    const marker = `SUBDATA_QUERY_URL=http://127.0.0.1:${ports.QUERY_PORT}`;
    if (existsSync(join(repoRoot, "services/query/src/main.ts"))) {
      expect(output).toContain(`http://127.0.0.1:${ports.QUERY_PORT}`);
      expect(await grpcHealthServing(`http://127.0.0.1:${ports.QUERY_PORT}`, token)).toBe(true);
      expect(processesWithEnv(marker).length).toBeGreaterThan(0);
    } else {
      expect(output).toContain("query     skipped: not built yet");
    }

    launcher.kill("SIGTERM");
    const code = await Promise.race([exited, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 60_000))]);
    expect(code, output).toBe(0);
    await until("every child to be gone", () => processesWithEnv(marker).length === 0, 10_000);
  });
});
