import { spawn } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmbeddedPostgres, EmbeddedPostgresOptions } from "../../deploy/local/src/embedded-postgres.ts";
import { SHARED_CLUSTERS_DIR } from "../../deploy/local/src/cluster-location.ts";
import { privateClone } from "./private-clone.ts";
import { freePort } from "../support/free-port.ts";

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Paths under `dir` that anyone may write (symbolic links aside: their mode means nothing). */
function worldWritable(dir: string): string[] {
  const found: string[] = [];
  const visit = (path: string) => {
    const stats = lstatSync(path);
    if (stats.isSymbolicLink()) return;
    if (stats.mode & 0o002) found.push(path);
    if (stats.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry));
  };
  visit(dir);
  return found;
}

const asRoot = process.getuid?.() === 0;

describe("the embedded Postgres, run from a clone in a private folder (0700, spaces in its path)", () => {
  const clone = privateClone();
  const dataDir = join(clone.root, ".subdata");
  const said: string[] = [];
  let startEmbeddedPostgres: (options: EmbeddedPostgresOptions) => Promise<EmbeddedPostgres>;
  let postgres: EmbeddedPostgres | undefined;
  const options = async (): Promise<EmbeddedPostgresOptions> => ({
    dataDir,
    port: await freePort(),
    password: "embedded-test-password",
    database: "subdata",
    say: (line) => said.push(line),
    onLog: () => {},
  });
  const start = async () => {
    postgres = await startEmbeddedPostgres(await options());
    return postgres;
  };
  /** The Postgres the tests before started. */
  const current = (): EmbeddedPostgres => {
    if (!postgres) throw new Error("the first test did not start Postgres");
    return postgres;
  };

  beforeAll(async () => {
    // The clone's own launcher code, so the binaries it finds are the clone's, under the private folder.
    ({ startEmbeddedPostgres } = (await import(
      pathToFileURL(join(clone.root, "deploy/local/src/embedded-postgres.ts")).href
    )) as typeof import("../../deploy/local/src/embedded-postgres.ts"));
    mkdirSync(dataDir, { recursive: true, mode: 0o755 }); // as the launcher makes it
  });

  afterAll(async () => {
    await postgres?.stop();
    clone.remove();
  });

  it("initialises a cluster once, even as root, and keeps its data across restarts", { timeout: 120_000 }, async () => {
    const first = await start();
    await query(first.adminUrl, "CREATE TABLE kept (value text); INSERT INTO kept VALUES ('still here')");
    await first.stop();
    expect(first.process.running).toBe(false);

    const second = await start();
    expect(await query(second.adminUrl, "SELECT value FROM kept")).toEqual([{ value: "still here" }]);
    expect(said.filter((line) => line.startsWith("initialising"))).toHaveLength(1);
    expect(second.clusterDir).toBe(first.clusterDir);

    const link = join(dataDir, "postgres");
    if (asRoot) {
      // Postgres runs as the postgres user, which cannot reach the private folder: the cluster lives outside it.
      expect(readlinkSync(link)).toBe(second.clusterDir);
      expect(dirname(dirname(second.clusterDir))).toBe(SHARED_CLUSTERS_DIR);
      expect(statSync(second.clusterDir).uid).not.toBe(0);
      expect(worldWritable(dirname(second.clusterDir))).toEqual([]);
    } else {
      expect(lstatSync(link).isDirectory()).toBe(true);
      expect(second.clusterDir).toBe(link);
    }
    expect(statSync(second.clusterDir).mode & 0o777).toBe(0o700);
    // Nothing was opened up on the way: the private folder is as private as before.
    expect(statSync(clone.privateDir).mode & 0o777).toBe(0o700);
  });

  it("refuses a wrong password (scram-sha-256 over TCP)", async () => {
    const url = new URL(current().adminUrl);
    url.password = "wrong";
    const client = new pg.Client({ connectionString: url.toString() });
    await expect(client.connect()).rejects.toThrow(/password/);
    await client.end().catch(() => {});
  });

  it("stops a Postgres that a killed launcher left running, then starts its own", { timeout: 60_000 }, async () => {
    const left = current();
    const next = await start();
    expect(left.process.running).toBe(false);
    expect(said.some((line) => line.startsWith("stopping an embedded Postgres left running"))).toBe(true);
    expect(await query(next.adminUrl, "SELECT value FROM kept")).toEqual([{ value: "still here" }]);
  });

  it("deletes a lock file that names a live process other than this cluster's Postgres (a reused pid)", { timeout: 60_000 }, async () => {
    await current().stop();
    const { clusterDir } = current();
    const other = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      writeFileSync(join(clusterDir, "postmaster.pid"), `${other.pid}\n${clusterDir}\n`);
      const next = await start();
      expect(said).toContain(
        `removed the stale lock ${join(clusterDir, "postmaster.pid")} (it named pid ${other.pid}, which is not a Postgres in this cluster; none runs there)`,
      );
      expect(await query(next.adminUrl, "SELECT value FROM kept")).toEqual([{ value: "still here" }]);
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("says that the port is taken, naming it and the variable to change", { timeout: 60_000 }, async () => {
    await current().stop();
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", () => resolve()));
    const { port } = holder.address() as { port: number };
    try {
      const attempt = startEmbeddedPostgres({ ...(await options()), port });
      await expect(attempt).rejects.toThrow(`port ${port} on 127.0.0.1 is taken by another program`);
      await expect(attempt).rejects.toThrow("EMBEDDED_POSTGRES_PORT");
    } finally {
      holder.close();
    }
  });

  it("names the file Postgres may not read, and who it runs as", { timeout: 60_000 }, async () => {
    const control = join(current().clusterDir, "global", "pg_control");
    chmodSync(control, 0o000);
    try {
      const attempt = startEmbeddedPostgres(await options());
      await expect(attempt).rejects.toThrow(`permission denied on ${control} (Postgres runs as ${asRoot ? "the system user postgres" : "you"}`);
    } finally {
      chmodSync(control, 0o600);
    }
  });

  it("starts over with a new cluster after rm -rf .subdata, and removes the one it left behind", { timeout: 120_000 }, async () => {
    const before = current().clusterDir;
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o755 });
    said.length = 0;
    const fresh = await start();
    expect(said.filter((line) => line.startsWith("initialising"))).toHaveLength(1);
    await expect(query(fresh.adminUrl, "SELECT value FROM kept")).rejects.toThrow(/"kept" does not exist/);
    if (asRoot) {
      expect(fresh.clusterDir).not.toBe(before);
      expect(existsSync(dirname(before))).toBe(false);
      expect(said).toContain(`removed the embedded Postgres cluster ${dirname(before)}: ${dataDir} was reset and no longer uses it`);
    }
  });
});
