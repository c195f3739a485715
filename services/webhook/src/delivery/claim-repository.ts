import type { Queryable } from "@subdata/runtime";

/**
 * The claim: which due deliveries a worker sends next. Only the head of each (endpoint, resource) —
 * its lowest pending (version, id) — may be sent, so version n+1 waits until n succeeded or failed for
 * good, while other resources flow on.
 *
 * One statement, bounded work per call whatever the backlog:
 * - scan at most `scanLimit` due rows in (next_attempt_at, id) order (index webhook_deliveries_due);
 * - map each to its group's head with one probe of webhook_deliveries_pending_order;
 * - claim due heads, within each endpoint's room, FOR UPDATE SKIP LOCKED (replicas share the work);
 *   moving next_attempt_at forward by the lease is the claim (a worker that dies leaves a row that is
 *   due again after the lease: at-least-once);
 * - a scanned row whose head waits for a retry is *deferred* to the head's next_attempt_at, so it
 *   leaves the due index instead of being scanned by every claim (behind a head in flight, only when
 *   such rows fill the whole scan and nothing is claimable) — without that,
 *   a receiver that stays down with a backlog, or one busy resource with thousands of versions,
 *   makes every claim of every endpoint walk those rows. The head is locked FOR SHARE SKIP LOCKED while
 *   deferring: a head being recorded right now is skipped (its successor stays due), and a recorder
 *   that finishes a head waits for this statement, then releases the successor in a later statement
 *   (releaseNextHeads in record-repository.ts), so a deferral never outlives its head's
 *   completion by more than the head's own next_attempt_at.
 */

export interface ClaimedDelivery {
  id: string;
  merchantId: string;
  endpointId: string;
  eventId: string;
  resourceId: string;
  version: bigint;
  /** This attempt's number (1 for the first); counted at claim so a crash mid-attempt still counts. */
  attemptNumber: number;
  url: string;
  body: string;
  /** The event's stored W3C traceparent (the relay's trace), or null: the attempt then starts a trace. */
  traceparent: string | null;
  secretCiphertext: Buffer;
  /** Present only while the rotation's grace period runs. */
  previousSecretCiphertext: Buffer | null;
  /** The endpoint had a failed attempt since its last success when this was claimed. */
  endpointFailing: boolean;
}

export interface ClaimOptions {
  limit: number;
  /** In-flight deliveries allowed per healthy endpoint (in this process). */
  healthyCap: number;
  /** In-flight deliveries allowed per endpoint that is failing (failing_since set). */
  failingCap: number;
  /** This process's in-flight deliveries per endpoint. */
  inFlight: ReadonlyMap<string, number>;
  /** Endpoints known to be at their cap: their rows are skipped in the scan. */
  fullEndpointIds: readonly string[];
  /** A claimed delivery is due again after this long if its worker vanished (crash → retry). */
  leaseMs: number;
  /** Due rows looked at per call (bounds the statement's work). */
  scanLimit: number;
}

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  /** Rows moved out of the due index because their head is not due. */
  deferred: number;
  /** Due rows the scan looked at (equal to scanLimit: more may be due). */
  scanned: number;
}

export interface ClaimRepository {
  /** Claims due heads within each endpoint's room and defers rows whose head is not due; one statement. */
  claimDue(options: ClaimOptions): Promise<ClaimResult>;
}

export function createClaimRepository(db: Queryable): ClaimRepository {
  return { claimDue: (options) => claimDue(db, options) };
}

async function claimDue(db: Queryable, options: ClaimOptions): Promise<ClaimResult> {
  const result = await db.query<ClaimRow>(
    `WITH scan AS (
       SELECT d.id, d.endpoint_id, d.resource_id
         FROM webhook_deliveries d
        WHERE d.status = 'PENDING' AND d.next_attempt_at <= now()
          AND d.endpoint_id <> ALL ($5::text[])
        ORDER BY d.next_attempt_at, d.id
        LIMIT $8
     ), judged AS (
       SELECT scan.id, scan.endpoint_id, head.id AS head_id, head.next_attempt_at AS head_at
         FROM scan
        CROSS JOIN LATERAL (
              SELECT p.id, p.next_attempt_at
                FROM webhook_deliveries p
               WHERE p.endpoint_id = scan.endpoint_id AND p.resource_id = scan.resource_id AND p.status = 'PENDING'
               ORDER BY p.version, p.id
               LIMIT 1) AS head
     ), due_heads AS (
       SELECT DISTINCT judged.head_id AS id, judged.endpoint_id, judged.head_at
         FROM judged WHERE judged.head_at <= now()
     ), ranked AS (
       SELECT due_heads.id,
              row_number() OVER (PARTITION BY due_heads.endpoint_id ORDER BY due_heads.head_at, due_heads.id) AS rank,
              (CASE WHEN ep.failing_since IS NULL THEN $2::int ELSE $3::int END) - coalesce(busy.in_flight, 0) AS room
         FROM due_heads
         JOIN webhook_endpoints ep ON ep.id = due_heads.endpoint_id AND ep.status = 'ENABLED'
         LEFT JOIN unnest($6::text[], $7::int[]) AS busy (endpoint_id, in_flight) ON busy.endpoint_id = due_heads.endpoint_id
     ), picked AS (
       -- Here and below, rows already found are fetched by primary key (= ANY (ARRAY(…))) and re-checked
       -- as "status::text = 'PENDING'" and "now() - next_attempt_at >= 0": neither lets the planner use
       -- the partial (status = 'PENDING') indexes or a time range, so whatever the statistics say (a
       -- table analyzed while empty looks like one row) it cannot walk every pending row instead, which
       -- takes seconds per claim.
       SELECT d.id
         FROM webhook_deliveries d
        WHERE d.id = ANY (ARRAY(SELECT ranked.id FROM ranked WHERE ranked.rank <= ranked.room))
          AND d.status::text = 'PENDING' AND now() - d.next_attempt_at >= interval '0'
        ORDER BY d.next_attempt_at, d.id
        LIMIT $1
        FOR UPDATE OF d SKIP LOCKED
     ), waiting_heads AS (
       SELECT h.id, h.next_attempt_at
         FROM webhook_deliveries h
        WHERE h.id = ANY (ARRAY(SELECT judged.head_id FROM judged WHERE judged.head_at > now()))
          AND h.status::text = 'PENDING' AND h.next_attempt_at - now() > interval '0'
          -- Behind a head waiting for its retry, always; behind one in flight (next_attempt_at is its
          -- claim's lease) only when such rows filled the whole scan and nothing could be claimed:
          -- those heads finish within moments, and deferring costs an update now and a release later.
          AND (h.next_attempt_at <> h.last_attempt_at + $4::int * interval '1 millisecond'
               OR ((SELECT count(*) FROM scan) = $8 AND NOT EXISTS (SELECT 1 FROM picked)))
          FOR SHARE OF h SKIP LOCKED
     ), deferred AS (
       UPDATE webhook_deliveries s
          SET next_attempt_at = waiting_heads.next_attempt_at
         FROM judged JOIN waiting_heads ON waiting_heads.id = judged.head_id
        WHERE s.id = ANY (ARRAY(SELECT judged.id FROM judged JOIN waiting_heads ON waiting_heads.id = judged.head_id))
          AND s.id = judged.id AND s.id <> judged.head_id AND s.status::text = 'PENDING' AND now() - s.next_attempt_at >= interval '0'
       RETURNING 1
     ), claimed AS (
       UPDATE webhook_deliveries d
          SET next_attempt_at = now() + $4::int * interval '1 millisecond',
              attempt_count = d.attempt_count + 1,
              last_attempt_at = now()
         FROM webhook_events ev, webhook_endpoints ep
        WHERE d.id = ANY (ARRAY(SELECT picked.id FROM picked)) AND ev.id = d.event_id AND ep.id = d.endpoint_id
       RETURNING d.id, d.merchant_id, d.endpoint_id, d.event_id, d.resource_id, d.version, d.attempt_count,
                 ep.url, ev.body, ev.traceparent, ep.secret_ciphertext,
                 CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret_ciphertext END AS previous_secret_ciphertext,
                 ep.failing_since IS NOT NULL AS endpoint_failing
     )
     SELECT claimed.*, NULL::int AS deferred, NULL::int AS scanned FROM claimed
     UNION ALL
     SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            (SELECT count(*) FROM deferred)::int, (SELECT count(*) FROM scan)::int`,
    [
      options.limit,
      options.healthyCap,
      options.failingCap,
      Math.round(options.leaseMs),
      options.fullEndpointIds,
      [...options.inFlight.keys()],
      [...options.inFlight.values()],
      options.scanLimit,
    ],
  );
  const claimed: ClaimedDelivery[] = [];
  let deferred = 0;
  let scanned = 0;
  for (const row of result.rows) {
    if (row.id === null) {
      deferred = row.deferred ?? 0;
      scanned = row.scanned ?? 0;
      continue;
    }
    claimed.push({
      id: row.id,
      merchantId: row.merchant_id,
      endpointId: row.endpoint_id,
      eventId: row.event_id,
      resourceId: row.resource_id,
      version: row.version,
      attemptNumber: row.attempt_count,
      url: row.url,
      body: row.body,
      traceparent: row.traceparent,
      secretCiphertext: row.secret_ciphertext,
      previousSecretCiphertext: row.previous_secret_ciphertext,
      endpointFailing: row.endpoint_failing,
    });
  }
  return { claimed, deferred, scanned };
}

/** Claimed rows, then one summary row (id NULL) carrying the counts. */
interface ClaimRow {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  event_id: string;
  resource_id: string;
  version: bigint;
  attempt_count: number;
  url: string;
  body: string;
  traceparent: string | null;
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
  endpoint_failing: boolean;
  deferred: number | null;
  scanned: number | null;
}
