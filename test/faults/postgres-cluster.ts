import { execFile } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const run = promisify(execFile);
const BIN = process.env.SUBDATA_PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * A throwaway PostgreSQL 15 cluster that the fault suite owns, so it may restart it with
 * `pg_ctl restart -m immediate` (a crash: no checkpoint, recovery from WAL on start). As root the
 * binaries run as the `postgres` system user, which must own the data directory.
 */
export interface PostgresCluster {
  port: number;
  /** Superuser connection to `database`. */
  adminUrl: string;
  /** `pg_ctl restart -m immediate`: every connection is cut; WAL recovery on the way up. */
  restartImmediate(): Promise<void>;
  stop(): Promise<void>;
}

function asPostgres(command: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const binary = join(BIN, command);
  const env = { ...process.env, LC_ALL: "C" };
  if (process.getuid?.() === 0) return run("runuser", ["-u", "postgres", "--", binary, ...args], { env });
  return run(binary, args, { env });
}

async function waitAccepting(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`Postgres did not accept connections: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export async function startPostgresCluster(port: number, database: string): Promise<PostgresCluster> {
  const root = mkdtempSync(join(tmpdir(), "subdata-faults-pg-"));
  const dataDir = join(root, "data");
  const password = `pw${Math.random().toString(36).slice(2)}${Date.now()}`;
  const passwordFile = join(root, "pwfile");
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (process.getuid?.() === 0) {
    const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
    const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
    chmodSync(root, 0o711);
    chownSync(root, uid, gid);
    chownSync(passwordFile, uid, gid);
  }
  await asPostgres("initdb", [
    `--pgdata=${dataDir}`,
    "--auth=scram-sha-256",
    "--username=postgres",
    `--pwfile=${passwordFile}`,
    "--encoding=UTF8",
    "--locale=C",
  ]);
  rmSync(passwordFile, { force: true });
  // fsync stays on: the durability settings under test are the production ones.
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200`;
  const ctl = (action: string, ...extra: string[]) =>
    asPostgres("pg_ctl", [action, "-D", dataDir, "-o", options, "-l", join(root, "log"), "-w", "-t", "60", ...extra]);
  await ctl("start");
  const serverUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  await waitAccepting(`${serverUrl}/postgres`);
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  await admin.end();
  const adminUrl = `${serverUrl}/${database}`;
  return {
    port,
    adminUrl,
    async restartImmediate() {
      await ctl("restart", "-m", "immediate");
      await waitAccepting(adminUrl);
    },
    async stop() {
      await asPostgres("pg_ctl", ["stop", "-D", dataDir, "-m", "immediate", "-w"]).catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
}
