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

/** A pg pool with UTC sessions, a statement timeout and exact timestamp/bigint parsing. */
export function createPool(options: PoolOptions): pg.Pool {
  const settings = ["-c TimeZone=UTC"];
  if (options.readOnly) settings.push("-c default_transaction_read_only=on");
  if (options.genericPlans) settings.push("-c plan_cache_mode=force_generic_plan");
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 4,
    application_name: options.applicationName,
    statement_timeout: options.statementTimeoutMs ?? 5_000,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    options: settings.join(" "),
    types: typeParsers,
  });
  // pg-pool drops its error listener while a client is checked out. A connection that dies between
  // two statements of a transaction (Postgres restarted, the network cut) would then emit an
  // unhandled 'error' and kill the process (found by the fault suite). The holder's next query
  // fails and is handled where it is made, so the event itself needs no action.
  // ('acquire' fires before the pool removes its own listener, so ours is added once, for good.)
  pool.on("acquire", (client) => {
    if (!client.listeners("error").includes(ignoreCheckedOutError)) client.on("error", ignoreCheckedOutError);
  });
  return pool;
}

function ignoreCheckedOutError(): void {}
