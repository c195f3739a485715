import { type Pool, unnestColumns } from "@subdata/runtime";
import type { OutboxRow } from "./outbox-event.ts";

/** What the relay did with a claimed batch: rows JetStream acknowledged, and rows that failed. */
export interface BatchOutcome {
  publishedIds: readonly string[];
  failures: ReadonlyArray<{ id: string; error: string }>;
}

export interface OutboxRepository {
  /**
   * Claims up to `limit` pending rows in a transaction and hands them to `handle`, then records the
   * outcome and commits; the row locks keep other relays off these rows until then. Rows come in seq
   * order, and only rows with no earlier pending row of the same resource held elsewhere, so a
   * resource's events are never published out of order by two relays. If `handle` throws, the
   * transaction rolls back and every row stays pending.
   */
  withClaimedBatch(limit: number, handle: (rows: OutboxRow[]) => Promise<BatchOutcome>): Promise<{ claimed: number; outcome: BatchOutcome }>;
  /** Deletes published rows older than `retentionDays`, at most `maxRows`; returns how many. */
  purgePublished(retentionDays: number, maxRows: number): Promise<number>;
  /**
   * Deletes the change feed's commits (with their events) older than `retentionDays`, oldest first, at
   * most `maxCommits`, and moves each merchant's horizon past them; returns how many commits.
   */
  purgeChangeEvents(retentionDays: number, maxCommits: number): Promise<number>;
}

// SKIP LOCKED lets several relays (and rounds) claim disjoint batches. A row whose resource has an
// earlier pending row outside this claim (locked by another relay or round) is left for later:
// publishing it now could overtake that earlier event. Resource ids carry their kind's prefix (sub_,
// ch_, ord_), so the resource id alone names the chain.
//
// Those earlier rows are found with one range scan of the pending rows below the claim's highest seq
// (the claim itself plus whatever others hold there), not with a probe per claimed row: statistics
// taken while the outbox is drained (the normal state) say "one pending row", and the planner then
// answers each probe by walking every pending row — claimed × pending rows, 10 s for 500 × 20,000,
// past the statement timeout, so the relay would stall behind any backlog.
//
// Each claimed row is then checked against them by a lookup in one jsonb object (resource id → its
// first seq held elsewhere: a binary search), not by a join: under the same statistics the planner
// expects one row on each side and joins them in a nested loop, claimed × held comparisons (two rounds
// of 500 each: 250,000 per claim, half the claim's time in a burst).
//
// The event itself is read from change_events (same id); only the outbox rows are locked.
const CLAIM = `
WITH claimed AS (
  SELECT id, seq, resource_id, attempts
    FROM event_outbox
   WHERE published_at IS NULL
   ORDER BY seq
   LIMIT $1
     FOR UPDATE SKIP LOCKED
), held_elsewhere AS (
  SELECT jsonb_object_agg(earliest.resource_id, earliest.seq) AS first_seq
    FROM (SELECT other.resource_id, min(other.seq) AS seq
            FROM event_outbox other
           WHERE other.published_at IS NULL
             AND other.seq < (SELECT max(seq) FROM claimed)
             AND other.id NOT IN (SELECT id FROM claimed)
           GROUP BY other.resource_id) AS earliest
)
SELECT c.id, c.seq, c.attempts, e.merchant_id, e.resource_type, e.resource_id, e.event_type, e.version, e.occurred_at, e.payload
  FROM claimed c
  JOIN change_events e ON e.id = c.id
 WHERE coalesce(((SELECT first_seq FROM held_elsewhere) ->> c.resource_id)::bigint > c.seq, true)
 ORDER BY c.seq`;

const MARK_PUBLISHED = `
UPDATE event_outbox SET published_at = clock_timestamp(), attempts = attempts + 1
 WHERE id = ANY ($1::text[])`;

const RECORD_FAILURES = `
UPDATE event_outbox o SET attempts = o.attempts + 1, last_error = left(f.error, 1000)
  FROM unnest($1::text[], $2::text[]) AS f (id, error)
 WHERE o.id = f.id`;

export function createOutboxRepository(pool: Pool): OutboxRepository {
  return {
    async withClaimedBatch(limit, handle) {
      const client = await pool.connect();
      let broken: unknown;
      try {
        await client.query("BEGIN");
        const { rows } = await client.query<OutboxRow>(CLAIM, [limit]);
        if (rows.length === 0) {
          await client.query("COMMIT");
          return { claimed: 0, outcome: { publishedIds: [], failures: [] } };
        }
        const outcome = await handle(rows);
        if (outcome.publishedIds.length > 0) await client.query(MARK_PUBLISHED, [outcome.publishedIds]);
        if (outcome.failures.length > 0) {
          await client.query(RECORD_FAILURES, unnestColumns(outcome.failures, [(f) => f.id, (f) => f.error]));
        }
        await client.query("COMMIT");
        return { claimed: rows.length, outcome };
      } catch (error) {
        broken = error;
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        // A client that failed mid-transaction may be in any state: discard it rather than pool it.
        client.release(broken instanceof Error ? broken : undefined);
      }
    },

    async purgePublished(retentionDays, maxRows) {
      const { rows } = await pool.query<{ purged: number }>("SELECT subdata_purge_published_events(make_interval(days => $1), $2) AS purged", [
        retentionDays,
        maxRows,
      ]);
      return rows[0]?.purged ?? 0;
    },

    async purgeChangeEvents(retentionDays, maxCommits) {
      const { rows } = await pool.query<{ purged: number }>("SELECT subdata_purge_change_events(make_interval(days => $1), $2) AS purged", [
        retentionDays,
        maxCommits,
      ]);
      return rows[0]?.purged ?? 0;
    },
  };
}

/** The claim's SQL, for tests that EXPLAIN it. */
export const outboxStatements = { claim: CLAIM };
