import { type Pool, type PoolClient, unnestColumns } from "@subdata/runtime";
import type { ClaimedDelivery } from "./claim-repository.ts";
import type { AttemptResult } from "./deliver-webhook.ts";

/**
 * Records finished attempts, many per transaction (the attempt recorder's group commit): the attempt
 * log rows, each delivery's new state, the endpoints' failing_since, disabling, and the release of the
 * next version of each finished (endpoint, resource). Until this commits, a delivery keeps its
 * claim lease (and counts as in flight against its endpoint's and merchant's caps), so a crash between POST and record leads to another attempt (at-least-once). Updates
 * apply only while the delivery is still PENDING: it may have been cancelled (endpoint disabled) or
 * deleted while in flight.
 */

/** What to do with the delivery after an attempt (see retry-schedule.ts and delivery-worker.ts). */
export type DeliveryDecision = { kind: "succeeded" } | { kind: "retry"; delayMs: number } | { kind: "failed" } | { kind: "gone" };

export interface FinishedAttempt {
  delivery: ClaimedDelivery;
  attempt: AttemptResult;
  decision: DeliveryDecision;
}

export interface RecordOptions {
  /** An endpoint whose first failure since its last success is older than this is disabled. */
  disableAfterMs: number;
  /** Reason recorded when that happens ("no successful delivery for 5d"). */
  disableReason: string;
}

const GONE_REASON = "receiver answered 410 Gone";

/** Endpoint id → the reason it was disabled by this batch. */
export type DisabledEndpoints = Map<string, string>;

type FailingSince = "clear" | "restart" | "mark";

/**
 * How each endpoint's failing_since changes, replaying the batch in order: a success clears it, a
 * failure sets it if unset. Hence "clear" (last outcome a success), "restart" (a failure after a
 * success in this batch: now()) or "mark" (failures only: keep an older failing_since).
 */
export function failingSinceChanges(attempts: readonly FinishedAttempt[]): Map<string, FailingSince> {
  const changes = new Map<string, FailingSince>();
  for (const { delivery, decision } of attempts) {
    const previous = changes.get(delivery.endpointId);
    if (decision.kind === "succeeded") changes.set(delivery.endpointId, "clear");
    else changes.set(delivery.endpointId, previous === "clear" || previous === "restart" ? "restart" : "mark");
  }
  return changes;
}

export async function recordAttempts(pool: Pool, attempts: readonly FinishedAttempt[], options: RecordOptions): Promise<DisabledEndpoints> {
  if (attempts.length === 0) return new Map();
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const disabled = await recordIn(client, attempts, options);
    await client.query("COMMIT");
    return disabled;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function recordIn(client: PoolClient, attempts: readonly FinishedAttempt[], options: RecordOptions): Promise<DisabledEndpoints> {
  const changes = failingSinceChanges(attempts);
  // One statement: the log rows, the deliveries' new states and failing_since (independent rows, so
  // one snapshot is enough). 410 Gone leaves the delivery PENDING: disabling cancels it just below.
  // Unnamed, like releaseNextHeads: planned at each call. As named statements (generic plans after five
  // calls) both cost more Postgres CPU per call in bench bursts: this one 4–73 ms instead of 5.6 ms,
  // the release 6.7 ms instead of 0.5 ms.
  await client.query(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::bigint[], $6::int[], $7::text[], $8::text[], $9::text[], $10::bigint[])
                AS i (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body, kind, delay_ms)
     ), logged AS (
       INSERT INTO webhook_attempts
         (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body)
       SELECT i.delivery_id, i.merchant_id, i.attempt_number, i.started_at, i.latency_micros, i.response_status, i.error_class, i.response_body
         -- Locked, not only seen: a delivery whose endpoint is being deleted (ON DELETE CASCADE) is waited
         -- for and then skipped; seen in this statement's snapshot, its log row would fail the foreign key
         -- and with it every other endpoint's outcome in the batch.
         FROM input i WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = i.delivery_id FOR KEY SHARE)
       RETURNING 1
     ), updated AS (
       UPDATE webhook_deliveries d
          SET status = CASE i.kind WHEN 'succeeded' THEN 'SUCCEEDED' WHEN 'failed' THEN 'FAILED' ELSE 'PENDING' END::webhook_delivery_status,
              delivered_at = CASE WHEN i.kind = 'succeeded' THEN now() ELSE d.delivered_at END,
              claimed_until = NULL,
              next_attempt_at = CASE i.kind WHEN 'retry' THEN now() + i.delay_ms * interval '1 millisecond'
                                            WHEN 'gone' THEN d.next_attempt_at ELSE now() END
         FROM input i
        WHERE d.id = i.delivery_id AND d.status::text = 'PENDING'
       RETURNING 1
     ), endpoints AS (
       UPDATE webhook_endpoints ep
          SET failing_since = CASE c.change WHEN 'clear' THEN NULL WHEN 'restart' THEN now() ELSE coalesce(ep.failing_since, now()) END
         FROM unnest($11::text[], $12::text[]) AS c (endpoint_id, change)
        WHERE ep.id = c.endpoint_id
          AND (CASE c.change WHEN 'clear' THEN ep.failing_since IS NOT NULL WHEN 'mark' THEN ep.failing_since IS NULL ELSE true END)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM logged) AS logged, (SELECT count(*) FROM updated) AS updated, (SELECT count(*) FROM endpoints) AS endpoints`,
    [
      ...unnestColumns(attempts, [
        ({ delivery }) => delivery.id,
        ({ delivery }) => delivery.merchantId,
        ({ delivery }) => delivery.attemptNumber,
        ({ attempt }) => attempt.startedAt.toISOString(),
        ({ attempt }) => attempt.latencyMicros.toString(),
        ({ attempt }) => attempt.status,
        ({ attempt }) => attempt.errorClass,
        ({ attempt }) => attempt.responseBody,
        ({ decision }) => decision.kind,
        ({ decision }) => (decision.kind === "retry" ? Math.round(decision.delayMs) : null),
      ]),
      [...changes.keys()],
      [...changes.values()],
    ],
  );

  const disabled: DisabledEndpoints = new Map();
  const gone = [...new Set(attempts.filter((x) => x.decision.kind === "gone").map((x) => x.delivery.endpointId))];
  const failing = [...changes].filter(([, change]) => change !== "clear").map(([endpointId]) => endpointId);
  if (gone.length > 0 || failing.length > 0) {
    // Statement after the one above, so failing_since set there is seen; sorted ids lock in one order.
    const { rows } = await client.query<{ id: string; reason: string }>(
      `WITH off AS (
         UPDATE webhook_endpoints ep
            SET status = 'DISABLED', updated_at = now(),
                disabled_reason = CASE WHEN ep.id = ANY ($1::text[]) THEN $3 ELSE $4 END
          WHERE ep.status = 'ENABLED'
            AND (ep.id = ANY ($1::text[])
                 OR (ep.id = ANY ($2::text[]) AND ep.failing_since <= now() - $5::bigint * interval '1 millisecond'))
         RETURNING ep.id, ep.disabled_reason AS reason
       ), cancelled AS (
         -- "version IS NOT NULL": see the claim's group probe (claim-repository.ts).
         UPDATE webhook_deliveries d SET status = 'CANCELLED'
           FROM off WHERE d.endpoint_id = off.id AND d.status = 'PENDING' AND d.version IS NOT NULL
         RETURNING 1
       )
       SELECT off.id, off.reason, (SELECT count(*) FROM cancelled) AS cancelled FROM off`,
      [gone.sort(), failing.sort(), GONE_REASON, options.disableReason, Math.round(options.disableAfterMs)],
    );
    for (const row of rows) disabled.set(row.id, row.reason);
  }

  const finished = attempts.filter((x) => x.decision.kind === "succeeded" || x.decision.kind === "failed");
  if (finished.length > 0)
    await releaseNextHeads(
      client,
      finished.map((x) => x.delivery),
    );
  return disabled;
}

/**
 * Makes the next version of each finished (endpoint, resource) due now if a claim deferred it to
 * the finished head's lease. A separate statement after the state update, so its snapshot sees every
 * deferral committed by a claim that held the head's lock while that update waited for it. Only rows
 * never attempted are pulled forward: a later version with attempts of its own (a resend made an
 * older version pending again) keeps its retry time, and waits at most until then.
 */
async function releaseNextHeads(client: PoolClient, finished: readonly ClaimedDelivery[]): Promise<void> {
  await client.query(RELEASE_NEXT_HEADS, unnestColumns(finished, [(d) => d.endpointId, (d) => d.resourceId]));
}

// The probe is the claim's group probe, "version IS NOT NULL" included (claim-repository.ts); for the
// updated row, "status::text" and "next_attempt_at - now() > 0" let no partial index or time range
// apply, so the planner cannot choose to walk every pending row instead of the primary key (statistics
// taken before a backlog).
const RELEASE_NEXT_HEADS = `UPDATE webhook_deliveries s SET next_attempt_at = now()
       FROM unnest($1::text[], $2::text[]) AS g (endpoint_id, resource_id)
      CROSS JOIN LATERAL (
            SELECT n.id FROM webhook_deliveries n
             WHERE n.endpoint_id = g.endpoint_id AND n.resource_id = g.resource_id AND n.status = 'PENDING' AND n.version IS NOT NULL
             ORDER BY n.version, n.id
             LIMIT 1) AS next
      WHERE s.id = next.id AND s.status::text = 'PENDING' AND s.attempt_count = 0 AND s.next_attempt_at - now() > interval '0'`;

/** The release's SQL, for tests that EXPLAIN it. */
export const recordStatements = { releaseNextHeads: RELEASE_NEXT_HEADS };
