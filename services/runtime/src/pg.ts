import pg from "pg";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** What a repository needs: a pool or one of its connections (a transaction); tests wrap it to count or fail queries. */
export type Queryable = Pick<pg.Pool, "query">;

export interface PoolOptions {
  connectionString: string;
  /** Small pools win on few cores: on one core a pool of 4 matched 16 with a fifth of the p99. */
  max?: number;
  statementTimeoutMs?: number;
  /** idle_in_transaction_session_timeout: a session idle this long inside a transaction is ended (its locks freed). */
  idleInTransactionTimeoutMs?: number;
  applicationName: string;
  /** Sets default_transaction_read_only for every session, for roles that must never write. */
  readOnly?: boolean;
  /**
   * Sets plan_cache_mode=force_generic_plan: parameterised statements get a generic plan (a named one is
   * planned once per connection instead of at every execution). Only for pools whose every statement has
   * one right plan whatever the parameters (see services/query/src/pool.ts).
   */
  genericPlans?: boolean;
}

const TIMESTAMPTZ_OID = 1184;
const TIMESTAMP_OID = 1114;
const INT8_OID = 20;

/**
 * Type parsers shared by every pool: timestamps stay the exact text Postgres sent (microseconds, UTC
 * because every session runs with TimeZone=UTC), since a JS Date drops microseconds and breaks keyset
 * cursors; int8 becomes a bigint so money in minor units is never rounded.
 */
const typeParsers = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === TIMESTAMPTZ_OID || oid === TIMESTAMP_OID) return (value: string) => value;
    if (oid === INT8_OID) return (value: string) => BigInt(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/**
 * Dead peers are noticed within seconds on both ends of every connection, not after the kernel's two
 * hours. Our end: TCP keepalive from 10 s of silence, and a client-side deadline on every query
 * (query_timeout) for a peer that accepts bytes but never answers (a blackholed network path).
 * Postgres' end, through the startup options (tcp_keepalives_* and tcp_user_timeout): a server whose
 * client vanished without a reset ends the session, rolling back its transaction and freeing its locks,
 * within about 25 s when idle (10 s + 3 × 5 s of probes) or 20 s with data unacknowledged.
 */
export const CONNECTION_LIVENESS = {
  keepAliveInitialDelayMs: 10_000,
  serverKeepAliveIdleSeconds: 10,
  serverKeepAliveIntervalSeconds: 5,
  serverKeepAliveCount: 3,
  tcpUserTimeoutMs: 20_000,
  /** query_timeout = statement_timeout + this: the server's cancellation (a clean 57014) normally comes first. */
  queryTimeoutMarginMs: 5_000,
} as const;

const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000;
const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

/** The -c settings every session of ours starts with (UTC, the server side of CONNECTION_LIVENESS). */
function sessionSettings(idleInTransactionTimeoutMs: number): string[] {
  return [
    "-c TimeZone=UTC",
    `-c tcp_keepalives_idle=${CONNECTION_LIVENESS.serverKeepAliveIdleSeconds}`,
    `-c tcp_keepalives_interval=${CONNECTION_LIVENESS.serverKeepAliveIntervalSeconds}`,
    `-c tcp_keepalives_count=${CONNECTION_LIVENESS.serverKeepAliveCount}`,
    `-c tcp_user_timeout=${CONNECTION_LIVENESS.tcpUserTimeoutMs}`,
    `-c idle_in_transaction_session_timeout=${idleInTransactionTimeoutMs}`,
  ];
}

/**
 * The connection settings of a pool (without pool-only fields): for a dedicated connection outside a
 * pool (LISTEN, a lock) that must behave like the pool's, `new pg.Client(connectionConfig(options))`.
 * `queryTimeout: false` leaves out the client-side query deadline (a connection that only LISTENs).
 */
export function connectionConfig(options: PoolOptions & { queryTimeout?: boolean }): pg.ClientConfig {
  const settings = sessionSettings(options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS);
  if (options.readOnly) settings.push("-c default_transaction_read_only=on");
  if (options.genericPlans) settings.push("-c plan_cache_mode=force_generic_plan");
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  return {
    connectionString: options.connectionString,
    application_name: options.applicationName,
    statement_timeout: statementTimeoutMs,
    ...(options.queryTimeout === false ? {} : { query_timeout: statementTimeoutMs + CONNECTION_LIVENESS.queryTimeoutMarginMs }),
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: CONNECTION_LIVENESS.keepAliveInitialDelayMs,
    options: settings.join(" "),
    types: typeParsers,
  };
}

/** A pg pool with UTC sessions, statement and idle-in-transaction timeouts, dead-peer detection and exact timestamp/bigint parsing. */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    ...connectionConfig(options),
    max: options.max ?? 4,
    idleTimeoutMillis: 30_000,
  });
  // pg-pool drops its error listener while a client is checked out. A connection that dies between
  // two statements of a transaction (Postgres restarted, the network cut) would then emit an
  // unhandled 'error' and kill the process (the fault suite's Postgres restart does this). The holder's next query
  // fails and is handled where it is made, so the event itself needs no action.
  // ('acquire' fires before the pool removes its own listener, so ours is added once, for good.)
  pool.on("acquire", (client) => {
    if (!client.listeners("error").includes(ignoreCheckedOutError)) client.on("error", ignoreCheckedOutError);
  });
  return pool;
}

function ignoreCheckedOutError(): void {}
