import type { Pool } from "@subdata/runtime";

/**
 * The claim: which due deliveries a worker sends next. Only the head of each (endpoint, resource) —
 * its lowest pending (version, id) — may be sent, so version n+1 waits until n succeeded or failed for
 * good, while other resources flow on.
 *
 * Fair shares: a delivery is in flight from its claim until its attempt is recorded (claimed_until,
 * the claim's lease). Each claim counts the in-flight rows of every replica, by endpoint and by
 * merchant (index webhook_deliveries_in_flight: only in-flight rows), leaves out the rows of endpoints
 * at their cap and of merchants with less than half of their cap free, and hands out at most the room
 * left under each cap, ranked by due time within the endpoint and then within the merchant. So one
 * merchant's slow receivers hold at most its merchant cap of the cluster's slots, and the rest stay
 * free for everyone else. Claims run one at a time across replicas (a transaction-level advisory lock
 * taken before counting): two claims counting at once could each see the same room and hand it out
 * twice.
 *
 * One round trip takes the lock and counts (BEGIN; lock; count, one simple query whose statements each
 * take their own snapshot, so the count sees every claim committed before the lock was ours). Between
 * the count and the claim statement nothing can add to the counts (the lock is ours, and now() is the
 * transaction's), so the room handed out is at most the room there is. The count reaches the claim as
 * constants: the endpoints and merchants at their cap as plain arrays, which the planner estimates
 * from its statistics. Computed inside the statement (ARRAY(SELECT …)), they are opaque to it: with
 * one or a few merchants it then estimates that the scan keeps almost no due row, and reads the whole
 * table and sorts it on every claim instead of taking the first rows of the due index.
 *
 * The claim statement, bounded work per call whatever the backlog:
 * - scan at most `scanLimit` due rows in (next_attempt_at, id) order (index webhook_deliveries_due_scan,
 *   whose predicate only this walk implies, so statistics taken before a backlog cannot send another
 *   statement's probes through it: migration 20261130004000000_webhook_due_scan_index.sql);
 * - map each to its group's head with one probe of webhook_deliveries_pending_order, read in its order
 *   (CLAIM_SETTINGS below). The probes (here and in the recorder's release) and the cancellations spell
 *   out "version IS NOT NULL", true of every row, so a later migration can narrow that index to it
 *   while this release runs (docs/decisions.md, "A partial index of pending deliveries per step, and no
 *   avoidable sort in a claim");
 * - claim due heads, within each endpoint's and merchant's room, FOR UPDATE SKIP LOCKED; moving
 *   next_attempt_at forward by the lease is the claim (a worker that dies leaves a row that is
 *   due again after the lease, and no longer counted in flight: at-least-once);
 * - a scanned row whose head waits for a retry is *deferred* to the head's next_attempt_at, so it
 *   leaves the due index instead of being scanned by every claim (behind a head in flight, only when
 *   such rows fill the whole scan and nothing is claimable) — without that,
 *   a receiver that stays down with a backlog, or one busy resource with thousands of versions,
 *   makes every claim of every endpoint walk those rows. A row never attempted is deferred for at
 *   least as long again as it has waited (at most ten leases): the recorder releases each resource's
 *   next version when its head finishes, so the time is only a fallback, and deferred only to the
 *   head's lease, the rows far behind a busy head would come due at every lease end and be deferred
 *   again, a row update with all its index entries each time. The head is locked FOR SHARE SKIP
 *   LOCKED while deferring: a head being recorded right now is skipped (its successor stays due), and
 *   a recorder that finishes a head waits for this statement, then releases the successor in a later
 *   statement (releaseNextHeads in record-repository.ts), so a deferral never outlives its head's
 *   completion by more than the head's own next_attempt_at.
 *
 * The due rows of endpoints and merchants at their cap are still walked by the scan's index (it is
 * ordered by time, not by merchant); the worker holds back claims that would find nothing else
 * (delivery-worker.ts), and docs/decisions.md has the figures.
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
  /** In-flight deliveries allowed per healthy endpoint, across replicas. */
  healthyCap: number;
  /** In-flight deliveries allowed per endpoint that is failing (failing_since set), across replicas. */
  failingCap: number;
  /** In-flight deliveries allowed per merchant, all its endpoints together, across replicas. */
  merchantCap: number;
  /** Endpoints this process knows to be at their cap: their rows are skipped in the scan. */
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
  /** Claims due heads within each endpoint's room and defers rows whose head is not due; one claim statement, after the lock and the count. */
  claimDue(options: ClaimOptions): Promise<ClaimResult>;
}

/**
 * The room worth a claim under a cap: half of it. A busy endpoint (delivery-worker.ts) or merchant
 * (claimIn) is claimed for again only once that much is free, so claims come in batches.
 */
export function claimBatch(cap: number): number {
  return Math.max(1, Math.floor(cap / 2));
}

/**
 * Due rows a claim looks at: twice the replica's free slots, at most one healthy endpoint's cap (twice
 * claimBatch of it), and at least 64 even when that cap is smaller. Beyond one cap, when few resources
 * have many versions each, the extra rows are later versions the claim only walks and defers: with a
 * cap of 256, a window of 512 instead of 256 delivered `--mix small`'s burst ~16 % slower and the
 * one-endpoint burst no faster (docs/decisions.md).
 */
export function claimWindow(free: number, healthyCap: number): number {
  return Math.max(64, Math.min(2 * free, healthyCap));
}

export function createClaimRepository(pool: Pool): ClaimRepository {
  return { claimDue: (options) => claimDue(pool, options) };
}

/**
 * The claim transaction's planner settings: no sort the planner could avoid. Statistics taken while the
 * table was empty (a new installation's first backlog) make the walk of due rows look cheapest as a
 * bitmap scan of every due row and a sort, which reads the whole backlog for each claim; the walk must be
 * the due index read in order. Every sort left in the claim statement is one no plan avoids (the window
 * functions over its CTEs, the picked rows by due time), and the group probes take their index's order
 * and stop at the first version (docs/decisions.md, "A partial index of pending deliveries per step, and
 * no avoidable sort in a claim"). A disabled sort is priced at 10^10, so the statement's cost passes
 * jit_above_cost: JIT compiled it in 1.2 s for a claim that runs in 1–2 ms, so JIT is off too.
 */
const CLAIM_SETTINGS = "SET LOCAL enable_sort = off; SET LOCAL jit = off";

/**
 * BEGIN, the planner settings, the advisory lock that makes claims take turns across replicas, and the
 * in-flight count, as one simple query (no parameters): see the top of this file. Index-only on
 * webhook_deliveries_in_flight.
 */
const IN_FLIGHT_COUNT = `SELECT f.merchant_id, f.endpoint_id, count(*)::int AS in_flight,
       (SELECT ep.failing_since IS NOT NULL FROM webhook_endpoints ep WHERE ep.id = f.endpoint_id) AS failing
  FROM webhook_deliveries f
 WHERE f.status = 'PENDING' AND f.claimed_until IS NOT NULL AND f.claimed_until > now()
 GROUP BY f.merchant_id, f.endpoint_id`;
const TAKE_TURN_AND_COUNT = `BEGIN;
${CLAIM_SETTINGS};
SELECT pg_advisory_xact_lock(hashtextextended('subdata-webhook-claim', 0));
${IN_FLIGHT_COUNT}`;

interface BusyRow {
  merchant_id: string;
  endpoint_id: string;
  in_flight: number;
  /** Null when the endpoint is gone (deleted while its deliveries were in flight). */
  failing: boolean | null;
}

async function claimDue(pool: Pool, options: ClaimOptions): Promise<ClaimResult> {
  const client = await pool.connect();
  let result: { rows: ClaimRow[] };
  try {
    // A query of several statements answers with one result per statement; the count is the last.
    const results = (await client.query(TAKE_TURN_AND_COUNT)) as unknown as Array<{ rows: BusyRow[] }>;
    result = await client.query<ClaimRow>(CLAIM, claimParameters(options, results[results.length - 1]?.rows ?? []));
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
  return summarise(result.rows);
}

/** The claim statement's values: the options, and the in-flight count taken under the lock. */
function claimParameters(options: ClaimOptions, busy: readonly BusyRow[]): unknown[] {
  const fullEndpoints = new Set(options.fullEndpointIds);
  const merchantInFlight = new Map<string, number>();
  for (const row of busy) {
    if (row.in_flight >= (row.failing ? options.failingCap : options.healthyCap)) fullEndpoints.add(row.endpoint_id);
    merchantInFlight.set(row.merchant_id, (merchantInFlight.get(row.merchant_id) ?? 0) + row.in_flight);
  }
  // A busy merchant is claimed for again only once a batch of its room is free, as the worker does for an
  // endpoint: its due backlog comes first in the scan's time order, so a merchant whose room came back a
  // few recorded attempts at a time would fill claim after claim's window with its own rows, each
  // claiming those few, while other merchants' newer rows waited beyond the window.
  const fullMerchants = [...merchantInFlight]
    .filter(([, inFlight]) => options.merchantCap - inFlight < claimBatch(options.merchantCap))
    .map(([merchantId]) => merchantId);
  return [
    options.limit,
    options.healthyCap,
    options.failingCap,
    Math.round(options.leaseMs),
    [...fullEndpoints],
    options.scanLimit,
    options.merchantCap,
    busy.map((row) => row.endpoint_id),
    busy.map((row) => row.in_flight),
    [...merchantInFlight.keys()],
    [...merchantInFlight.values()],
    fullMerchants,
  ];
}

const CLAIM = `WITH busy AS (
       -- Counted under the lock, just before this statement (see the top of this file).
       SELECT * FROM unnest($8::text[], $9::int[]) AS b (endpoint_id, in_flight)
     ), busy_merchants AS (
       SELECT * FROM unnest($10::text[], $11::int[]) AS b (merchant_id, in_flight)
     ), scan AS (
       SELECT d.id, d.merchant_id, d.endpoint_id, d.resource_id
         FROM webhook_deliveries d
        WHERE d.status = 'PENDING' AND d.next_attempt_at <= now()
          AND d.endpoint_id <> ALL ($5::text[]) AND d.merchant_id <> ALL ($12::text[])
        ORDER BY d.next_attempt_at, d.id
        LIMIT $6
     ), judged AS (
       SELECT scan.id, scan.merchant_id, scan.endpoint_id, head.id AS head_id, head.next_attempt_at AS head_at
         FROM scan
        CROSS JOIN LATERAL (
              SELECT p.id, p.next_attempt_at
                FROM webhook_deliveries p
               WHERE p.endpoint_id = scan.endpoint_id AND p.resource_id = scan.resource_id
                 AND p.status = 'PENDING' AND p.version IS NOT NULL
               ORDER BY p.version, p.id
               LIMIT 1) AS head
     ), due_heads AS (
       SELECT DISTINCT judged.head_id AS id, judged.merchant_id, judged.endpoint_id, judged.head_at
         FROM judged WHERE judged.head_at <= now()
     ), ranked AS (
       SELECT due_heads.id, due_heads.merchant_id, due_heads.head_at,
              row_number() OVER (PARTITION BY due_heads.endpoint_id ORDER BY due_heads.head_at, due_heads.id) AS rank,
              (CASE WHEN ep.failing_since IS NULL THEN $2::int ELSE $3::int END) - coalesce(busy.in_flight, 0) AS room
         FROM due_heads
         JOIN webhook_endpoints ep ON ep.id = due_heads.endpoint_id AND ep.status = 'ENABLED'
         LEFT JOIN busy ON busy.endpoint_id = due_heads.endpoint_id
     ), within_endpoint AS (
       -- The merchant's room is shared by its endpoints, in due order, among heads its endpoints can take.
       SELECT ranked.id,
              row_number() OVER (PARTITION BY ranked.merchant_id ORDER BY ranked.head_at, ranked.id) AS rank,
              $7::int - coalesce(busy_merchants.in_flight, 0) AS room
         FROM ranked
         LEFT JOIN busy_merchants ON busy_merchants.merchant_id = ranked.merchant_id
        WHERE ranked.rank <= ranked.room
     ), picked AS (
       -- Here and below, rows already found are fetched by primary key (= ANY (ARRAY(…))) and re-checked
       -- as "status::text = 'PENDING'" and "now() - next_attempt_at >= 0": neither lets the planner use
       -- the partial (status = 'PENDING') indexes or a time range, so whatever the statistics say (a
       -- table analyzed while empty looks like one row) it cannot walk every pending row instead, which
       -- takes seconds per claim.
       SELECT d.id
         FROM webhook_deliveries d
        WHERE d.id = ANY (ARRAY(SELECT within_endpoint.id FROM within_endpoint WHERE within_endpoint.rank <= within_endpoint.room))
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
               OR ((SELECT count(*) FROM scan) = $6 AND NOT EXISTS (SELECT 1 FROM picked)))
          FOR SHARE OF h SKIP LOCKED
     ), deferred AS (
       -- Never attempted: as long again as it has waited, at most ten leases (see the top of this file).
       UPDATE webhook_deliveries s
          SET next_attempt_at = CASE
                WHEN s.attempt_count = 0
                THEN greatest(waiting_heads.next_attempt_at,
                              now() + least(now() - s.created_at, 10 * $4::int * interval '1 millisecond'))
                ELSE waiting_heads.next_attempt_at END
         FROM judged JOIN waiting_heads ON waiting_heads.id = judged.head_id
        WHERE s.id = ANY (ARRAY(SELECT judged.id FROM judged JOIN waiting_heads ON waiting_heads.id = judged.head_id))
          AND s.id = judged.id AND s.id <> judged.head_id AND s.status::text = 'PENDING' AND now() - s.next_attempt_at >= interval '0'
       RETURNING 1
     ), claimed AS (
       UPDATE webhook_deliveries d
          SET next_attempt_at = now() + $4::int * interval '1 millisecond',
              claimed_until = now() + $4::int * interval '1 millisecond',
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
            (SELECT count(*) FROM deferred)::int, (SELECT count(*) FROM scan)::int`;

function summarise(rows: readonly ClaimRow[]): ClaimResult {
  const claimed: ClaimedDelivery[] = [];
  let deferred = 0;
  let scanned = 0;
  for (const row of rows) {
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

/** The statements' SQL and values, and the transaction's setting, for tests that EXPLAIN them as the claim runs them. */
export const claimStatements = { settings: CLAIM_SETTINGS, inFlightCount: IN_FLIGHT_COUNT, claim: CLAIM, claimParameters };
