import { type Logger, type Pool, sleep } from "@subdata/runtime";
import pg from "pg";

/**
 * The ingest leader's lock: a session-level Postgres advisory lock. Only the replica holding it
 * consumes events, so batches are stored in stream order whatever the number of replicas. The batches
 * are written through the connection holding the lock, which fences a replica that lost it: once that
 * connection is gone its writes cannot commit, and the lock is free only after its last commit
 * finished. Postgres releases the lock when the connection drops (process killed, network lost), so a
 * standby takes over at its next try.
 *
 * Each replica keeps one dedicated connection for this, opened with the pool's settings but outside
 * the pool (DATABASE_POOL_MAX stays for claims, attempts and RPCs): a standby retries the lock on it,
 * the leader holds the lock and writes on it.
 */

export interface HeldLock {
  /** The connection holding the lock; write through it. */
  client: pg.ClientBase;
  /** Aborted when the connection holding the lock failed or closed: the lock is gone. */
  lost: AbortSignal;
  /** A round trip on the lock's connection: true while the lock is still held. */
  confirm(): Promise<boolean>;
  /** Closes the connection, which releases the lock. */
  release(): Promise<void>;
}

export interface IngestLock {
  /** Tries every `retryMs` until the lock `name` is held; undefined if `signal` aborted first. */
  acquire(name: string, signal: AbortSignal): Promise<HeldLock | undefined>;
}

interface Connection {
  client: pg.Client;
  lost: AbortController;
}

export function createIngestLock(deps: { pool: Pool; logger: Logger; retryMs: number }): IngestLock {
  const { logger } = deps;

  async function open(): Promise<Connection> {
    const client = new pg.Client(deps.pool.options);
    const lost = new AbortController();
    // Without an error listener a dropped connection would crash the process.
    client.on("error", (error) => {
      if (!lost.signal.aborted) logger.warn({ err: error }, "ingest lock connection failed");
      lost.abort(error);
    });
    client.on("end", () => lost.abort(new Error("ingest lock connection closed")));
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    return { client, lost };
  }

  function held(connection: Connection): HeldLock {
    const { client, lost } = connection;
    return {
      client,
      lost: lost.signal,
      async confirm() {
        if (lost.signal.aborted) return false;
        try {
          await client.query("SELECT 1");
          return !lost.signal.aborted;
        } catch {
          return false;
        }
      },
      async release() {
        await client.end().catch(() => {});
      },
    };
  }

  return {
    async acquire(name, signal) {
      let connection: Connection | undefined;
      let standingBy = false;
      while (!signal.aborted) {
        try {
          if (!connection || connection.lost.signal.aborted) {
            await connection?.client.end().catch(() => {});
            connection = undefined;
            connection = await open();
          }
          const { rows } = await connection.client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [name]);
          if (rows[0]?.locked === true) return held(connection);
          if (!standingBy) logger.info({ lock: name }, "another replica is ingesting events; standing by");
          standingBy = true;
        } catch (error) {
          logger.warn({ err: error, lock: name }, "could not try the ingest lock; retrying");
        }
        await sleep(deps.retryMs, signal);
      }
      await connection?.client.end().catch(() => {});
      return undefined;
    },
  };
}
