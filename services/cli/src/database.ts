import { connectionConfig } from "@subdata/runtime";
import pg from "pg";
import type { CliContext } from "./cli-context.ts";
import { CliError, configError } from "./cli-error.ts";

/** DATABASE_URL: an owner/admin connection (the CLI migrates, seeds and writes like the app). */
export function databaseUrlSetting(context: CliContext): string {
  const url = context.requireSetting("DATABASE_URL");
  if (!/^postgres(ql)?:\/\//.test(url)) throw configError("DATABASE_URL is invalid: must be a postgres:// connection string");
  return url;
}

function hostOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return "(unparsable URL)";
  }
}

/** A connected client with a UTC session; the caller ends it. Connection errors name the host, never the password. */
async function connectDatabase(url: string): Promise<pg.Client> {
  // Keepalive and the server-side TCP timeouts of the services' pools; no statement or query deadline:
  // migrations and seeding may run long, and SIGTERM ends the connection (withDatabase).
  const { connectionString, application_name, keepAlive, keepAliveInitialDelayMillis, options } = connectionConfig({
    connectionString: url,
    applicationName: "subdata-cli",
    // Migrations hold their transaction while they work; the session-level limit must not cut them.
    idleInTransactionTimeoutMs: 0,
  });
  const client = new pg.Client({ connectionString, application_name, keepAlive, keepAliveInitialDelayMillis, options });
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw new CliError(`could not connect to the database at ${hostOf(url)}: ${(error as Error).message}`, "database");
  }
  return client;
}

/**
 * Runs work with a fresh connection and always closes it, so the CLI process can exit. When `signal`
 * aborts (SIGTERM), the connection is closed at once: the statement in flight fails, and Postgres rolls
 * back the open transaction and releases its locks, so a stopped command leaves nothing half-done.
 */
export async function withDatabase<T>(url: string, signal: AbortSignal, work: (client: pg.Client) => Promise<T>): Promise<T> {
  signal.throwIfAborted();
  const client = await connectDatabase(url);
  const close = () => client.end().catch(() => {});
  signal.addEventListener("abort", close, { once: true });
  try {
    signal.throwIfAborted();
    return await work(client);
  } finally {
    signal.removeEventListener("abort", close);
    await close();
  }
}

/** Runs work between BEGIN and COMMIT on the client, rolling back when it throws. */
export async function inTransaction<T>(client: pg.ClientBase, work: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}
