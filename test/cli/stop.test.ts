import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { waitFor } from "../support/wait-for.ts";
import { emptyDirectory, runCli } from "./run-cli.ts";

const BIN = fileURLToPath(new URL("../../services/cli/bin/subdata.js", import.meta.url));

describe("the CLI stopped by a signal", () => {
  let database: TestDatabase;
  let admin: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase("cli_stop");
    admin = new pg.Client({ connectionString: database.adminUrl });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await database?.drop();
  });

  const cliSessions = async () =>
    (
      await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'subdata-cli'", [
        database.name,
      ])
    ).rows[0]?.n;

  it("migrate, blocked on the migrations table as a Job is behind another migration: SIGTERM closes its connection and exits 143", async () => {
    // Another session holds the migrations table, the way a migration in flight elsewhere would.
    const holder = new pg.Client({ connectionString: database.adminUrl });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE pgmigrations IN ACCESS EXCLUSIVE MODE");
    const child = spawn(process.execPath, [BIN, "migrate", "--json"], {
      cwd: emptyDirectory(),
      env: { PATH: process.env.PATH ?? "", HOME: emptyDirectory(), DATABASE_URL: database.adminUrl },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    try {
      await waitFor("the CLI waiting for the table lock", async () => {
        const { rows } = await admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'subdata-cli' AND wait_event_type = 'Lock'",
          [database.name],
        );
        return (rows[0]?.n ?? 0) > 0;
      });
      child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 143, signal: null });
    } finally {
      child.kill("SIGKILL");
      await holder.query("ROLLBACK");
      await holder.end();
    }
    expect(stderr).toBe("error: stopped by SIGTERM\n");
    expect(JSON.parse(stdout)).toEqual({ error: { code: "stopped", message: "stopped by SIGTERM" } });
    // Its session is gone, and with it node-pg-migrate's advisory lock: the next run is not refused.
    await waitFor("the CLI's session to end", async () => (await cliSessions()) === 0);
    const { rows } = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)",
      [database.name],
    );
    expect(rows[0]?.n).toBe(0);
    const again = await runCli(["migrate"], { env: { DATABASE_URL: database.adminUrl } });
    expect(again).toMatchObject({ code: 0, stdout: "database is up to date: no migration to apply\n" });
  });
});
