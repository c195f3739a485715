import type { Logger, Pool, PoolClient } from "@subdata/runtime";
import { sleep } from "./relay-backoff.ts";

/**
 * The ingest leader's lock: a session-level Postgres advisory lock held on one dedicated connection
 * of the pool. Only the replica holding it consumes events, so batches are stored in stream order
 * whatever the number of replicas. The batches are written through that same connection, which
 * fences a replica that lost the lock: once its connection is gone its writes cannot commit, and the
 * lock is free only after its last commit finished. Postgres releases the lock when the connection
 * drops (process killed, network lost), so a standby takes over at its next try.
 */

export interface HeldLock {
  /** The connection holding the lock; write through it. */
  client: PoolClient;
  /** Aborted when the connection holding the lock failed or closed: the lock is gone. */
  lost: AbortSignal;
  /** A round trip on the lock's connection: true while the lock is still held. */
  confirm(): Promise<boolean>;
  /** Unlocks and returns the connection to the pool (or discards it if it failed). */
  release(): Promise<void>;
}

export interface IngestLock {
  /** Tries every `retryMs` until the lock `name` is held; undefined if `signal` aborted first. */
  acquire(name: string, signal: AbortSignal): Promise<HeldLock | undefined>;
}

export function createIngestLock(deps: { pool: Pool; logger: Logger; retryMs: number }): IngestLock {
  const { pool, logger } = deps;

  async function tryOnce(name: string): Promise<HeldLock | undefined> {
    const client = await pool.connect();
    const lost = new AbortController();
    const onError = (error: Error) => {
      if (!lost.signal.aborted) logger.warn({ err: error }, "ingest lock connection failed; the lock is lost");
      lost.abort(error);
    };
    const onEnd = () => lost.abort(new Error("ingest lock connection closed"));
    // A checked-out client without an error listener would crash the process when the server drops it.
    client.on("error", onError);
    client.on("end", onEnd);
    const detach = () => {
      client.off("error", onError);
      client.off("end", onEnd);
    };
    let locked = false;
    try {
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [name]);
      locked = rows[0]?.locked === true;
    } catch (error) {
      detach();
      client.release(error as Error);
      throw error;
    }
    if (!locked) {
      detach();
      client.release();
      return undefined;
    }
    let released = false;
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
        if (released) return;
        released = true;
        if (lost.signal.aborted) {
          detach();
          client.release(true);
          return;
        }
        try {
          await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [name]);
          detach();
          client.release();
        } catch (error) {
          detach();
          // Discarding the connection ends the session, which releases the lock all the same.
          client.release(error as Error);
        }
      },
    };
  }

  return {
    async acquire(name, signal) {
      let waitingLogged = false;
      while (!signal.aborted) {
        try {
          const held = await tryOnce(name);
          if (held) return held;
          if (!waitingLogged) logger.info({ lock: name }, "another replica is ingesting events; standing by");
          waitingLogged = true;
        } catch (error) {
          logger.warn({ err: error, lock: name }, "could not try the ingest lock; retrying");
        }
        await sleep(deps.retryMs, signal);
      }
      return undefined;
    },
  };
}
