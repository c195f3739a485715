import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { type Logger, type Pool, sleep } from "@subdata/runtime";
import pg from "pg";

/**
 * The ingest leader's lease: a row of webhook_ingest_leases (holder, epoch, expires_at). Only the
 * replica holding it consumes events, so batches are stored in stream order whatever the number of
 * replicas.
 *
 * Why a lease and not a session advisory lock: a lock lives as long as its connection, and a frozen
 * process (SIGSTOP, a VM paused) keeps its connection: its kernel still answers keepalives, so the lock
 * would be held for as long as the process sleeps. A lease ends by itself: the holder must renew it
 * within its TTL, and a standby takes it over, with the next epoch, once it has expired.
 *
 * Fencing: every batch is written by one statement that first renews the lease *for its epoch* and
 * inserts only if that renewal succeeded (ingest-repository.ts). A leader that wakes up late, or whose
 * statement arrives after a partition heals, finds another epoch in the row and writes nothing. A
 * watchdog stops a leader that could not renew within its TTL (its local clock, measured from before
 * each renewal was sent, so it never believes in a lease the database already let go), and a leader
 * checks the same deadline before each write.
 *
 * Each replica keeps one dedicated connection for this (the pool's settings, outside the pool): a
 * standby tries the lease on it, the leader renews and writes on it.
 */

export interface LeaseFence {
  name: string;
  epoch: bigint;
  ttlMs: number;
}

export interface HeldLease {
  /** The lease's connection; write through it. */
  client: pg.ClientBase;
  epoch: bigint;
  /** Aborted when the lease is lost: superseded, not renewed within its TTL, or its connection gone. */
  lost: AbortSignal;
  /** Renews the lease now; false once it is lost. */
  confirm(): Promise<boolean>;
  /**
   * The fence for one write, and when it was taken; undefined (and the lease lost) when the local
   * deadline has already passed. After the write, report whether it renewed the lease with written().
   */
  fence(): { fence: LeaseFence; takenAt: number } | undefined;
  /** A fenced write's outcome: renewed extends the lease from `takenAt`; not renewed means another replica holds it. */
  written(takenAt: number, renewed: boolean): void;
  /** Lets the lease go at once (a standby takes over without waiting for the TTL) and closes the connection. */
  release(): Promise<void>;
}

export interface IngestLease {
  /** Tries every `retryMs` until the lease `name` is held; undefined if `signal` aborted first. */
  acquire(name: string, signal: AbortSignal): Promise<HeldLease | undefined>;
}

export interface IngestLeaseOptions {
  pool: Pool;
  logger: Logger;
  /** How often a standby tries to take the lease. */
  retryMs: number;
  /** How long a lease lasts without renewal (SUBDATA_WEBHOOK_INGEST_LEASE_MS). */
  ttlMs: number;
  /** Monotonic milliseconds (tests stop or move time). */
  now?: () => number;
}

const TAKE = `
INSERT INTO webhook_ingest_leases AS l (name, holder, epoch, expires_at)
VALUES ($1, $2, 1, clock_timestamp() + $3::float8 * interval '1 millisecond')
ON CONFLICT (name) DO UPDATE
   SET holder = EXCLUDED.holder, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
 WHERE l.expires_at <= clock_timestamp()
RETURNING epoch`;

const RENEW = `
UPDATE webhook_ingest_leases SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
 WHERE name = $1 AND epoch = $2::bigint AND expires_at > clock_timestamp()
RETURNING epoch`;

const LET_GO = "UPDATE webhook_ingest_leases SET expires_at = clock_timestamp() WHERE name = $1 AND epoch = $2::bigint";

const HOLDER_OF = "SELECT holder, epoch, expires_at FROM webhook_ingest_leases WHERE name = $1";

interface Connection {
  client: pg.Client;
  closed: AbortController;
}

/** This process, as the lease's holder column names it: host, pid and a random part (a restarted pid is another holder). */
function leaseHolderId(): string {
  return `${hostname()}/${process.pid}/${randomBytes(4).toString("hex")}`;
}

/** Cuts the connection at once: a statement stuck on a silent peer fails now instead of at its deadline. */
function destroy(client: pg.Client): void {
  (client.connection as unknown as { stream?: { destroy(): void } }).stream?.destroy();
  client.end().catch(() => {});
}

export function createIngestLease(options: IngestLeaseOptions): IngestLease {
  const { logger, ttlMs } = options;
  const now = options.now ?? (() => performance.now());
  const holder = leaseHolderId();

  async function open(): Promise<Connection> {
    const client = new pg.Client(options.pool.options);
    const closed = new AbortController();
    // Without an error listener a dropped connection would crash the process.
    client.on("error", (error) => closed.abort(error));
    client.on("end", () => closed.abort(new Error("ingest lease connection closed")));
    try {
      await client.connect();
    } catch (error) {
      destroy(client);
      throw error;
    }
    return { client, closed };
  }

  function held(connection: Connection, name: string, epoch: bigint, takenAt: number): HeldLease {
    const { client } = connection;
    const lost = new AbortController();
    let validUntil = takenAt + ttlMs;
    let lastRenewalAt = takenAt;
    let renewing: Promise<boolean> | undefined;

    const lose = (reason: string) => {
      if (lost.signal.aborted) return;
      clearInterval(watchdog);
      logger.warn({ lease: name, epoch: String(epoch), reason }, "ingest lease lost; this replica stops ingesting");
      lost.abort(new Error(reason));
      destroy(client);
    };
    const extend = (sentAt: number) => {
      validUntil = Math.max(validUntil, sentAt + ttlMs);
    };

    const renew = (): Promise<boolean> => {
      renewing ??= (async () => {
        const sentAt = now();
        lastRenewalAt = sentAt;
        try {
          const { rowCount } = await client.query(RENEW, [name, epoch.toString(), ttlMs]);
          if (rowCount === 1) {
            extend(sentAt);
            return true;
          }
          lose("another replica holds the lease");
          return false;
        } catch (error) {
          // A failed renewal is not yet a lost lease: the watchdog decides at the deadline.
          if (!lost.signal.aborted) logger.warn({ err: error, lease: name }, "could not renew the ingest lease");
          return false;
        } finally {
          renewing = undefined;
        }
      })();
      return renewing;
    };

    // Renews an idle leader's lease every third of the TTL, and stops a leader past its deadline. After
    // a freeze the timer fires late: the deadline check comes first.
    const watchdog = setInterval(
      () => {
        if (now() >= validUntil) lose(`not renewed within its ${ttlMs} ms TTL`);
        else if (!renewing && now() - lastRenewalAt >= ttlMs / 3) void renew();
      },
      Math.max(50, Math.min(1_000, Math.floor(ttlMs / 6))),
    );
    watchdog.unref();
    connection.closed.signal.addEventListener("abort", () => lose("its connection closed"), { once: true });

    return {
      client,
      epoch,
      lost: lost.signal,
      async confirm() {
        if (lost.signal.aborted) return false;
        if (now() >= validUntil) {
          lose(`not renewed within its ${ttlMs} ms TTL`);
          return false;
        }
        return (await renew()) && !lost.signal.aborted;
      },
      fence() {
        if (lost.signal.aborted) return undefined;
        const takenAt = now();
        if (takenAt >= validUntil) {
          lose(`not renewed within its ${ttlMs} ms TTL`);
          return undefined;
        }
        lastRenewalAt = takenAt;
        return { fence: { name, epoch, ttlMs }, takenAt };
      },
      written(sentAt, renewed) {
        if (renewed) extend(sentAt);
        else lose("another replica holds the lease; the batch was not written");
      },
      async release() {
        clearInterval(watchdog);
        if (!lost.signal.aborted && !connection.closed.signal.aborted) {
          await client.query(LET_GO, [name, epoch.toString()]).catch(() => {});
        }
        lost.abort(new Error("released"));
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
          if (!connection || connection.closed.signal.aborted) {
            if (connection) destroy(connection.client);
            connection = undefined;
            connection = await open();
          }
          const sentAt = now();
          const { rows } = await connection.client.query<{ epoch: bigint | string }>(TAKE, [name, holder, ttlMs]);
          if (rows[0]) {
            const epoch = BigInt(rows[0].epoch);
            logger.info({ lease: name, epoch: String(epoch), holder }, "took the ingest lease");
            return held(connection, name, epoch, sentAt);
          }
          if (!standingBy) {
            const current = await connection.client.query<{ holder: string; epoch: bigint | string; expires_at: string }>(HOLDER_OF, [name]);
            const row = current.rows[0];
            logger.info(
              { lease: name, holder: row?.holder, epoch: row ? String(row.epoch) : undefined, expiresAt: row?.expires_at },
              "another replica holds the ingest lease; standing by",
            );
          }
          standingBy = true;
        } catch (error) {
          logger.warn({ err: error, lease: name }, "could not try the ingest lease; retrying");
        }
        await sleep(options.retryMs, signal);
      }
      if (connection) destroy(connection.client);
      return undefined;
    },
  };
}
