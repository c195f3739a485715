import type { ChangeEventRow } from "@subdata/events";
import { type Queryable, unnestColumns } from "@subdata/runtime";
import { DELIVERY_CHANNEL } from "../delivery/delivery-wakeups.ts";
import type { RenderedEvent } from "./event-message.ts";
import type { LeaseFence } from "./ingest-lease.ts";

/**
 * The SQL of webhook ingest: events and the deliveries they make. Delivery is purely table-driven (a
 * PENDING webhook_deliveries row whose next_attempt_at has passed is delivered, whoever inserted it), so
 * ingest only inserts rows and sends NOTIFY on DELIVERY_CHANNEL, naming their endpoints, to wake the
 * workers of every replica.
 */

/**
 * Stores the event body and one delivery per enabled endpoint of the merchant that wants this type,
 * in one statement (one transaction, one round trip). Idempotent: a redelivered message adds nothing.
 * Returns how many deliveries were created.
 */
export async function ingestEvent(db: Queryable, event: IngestedEvent): Promise<number> {
  return ingestEvents(db, [event]);
}

/** An event as ingest stores it: its body, and the trace it arrived in (delivery-trace.ts storedTraceparent). */
export interface IngestedEvent extends RenderedEvent {
  /** Canonical version-00 W3C traceparent, or null/absent: its attempts then start new traces. */
  traceparent?: string | null;
}

/**
 * Stores a batch of events in the given (stream) order and one delivery per enabled endpoint of each
 * event's merchant that wants its type, in one statement (one transaction), then one NOTIFY (only if
 * deliveries were created; notifyDeliveries). Deliveries are made only for events this statement
 * inserted, so a redelivered event adds nothing — not even for an endpoint created since the event was
 * first stored, which must not receive an old version after newer ones. Returns how many deliveries
 * were created.
 */
async function ingestEvents(db: Queryable, events: readonly IngestedEvent[]): Promise<number> {
  return (await storeEvents(db, events, undefined)).created;
}

/**
 * ingestEvents fenced by the ingest lease (ingest-lease.ts): the same statement first renews the lease
 * for `fence.epoch` and inserts nothing unless that renewal succeeded, so a leader that lost its lease —
 * however late its statement arrives — writes nothing. `renewed` says which happened.
 */
export async function ingestEventsFenced(db: Queryable, events: readonly IngestedEvent[], fence: LeaseFence): Promise<StoredEvents> {
  return storeEvents(db, events, fence);
}

export interface StoredEvents {
  /** Whether the lease was renewed (always, unfenced); nothing is written otherwise. */
  renewed: boolean;
  /** Deliveries created. */
  created: number;
  /** The endpoints those deliveries are for, each once. */
  endpointIds: string[];
}

/**
 * At most this many endpoint ids ride in a NOTIFY payload (8,000 bytes at most; an id is 35); beyond
 * it the payload is empty, which wakes workers for any endpoint (delivery-wakeups.ts).
 */
const NOTIFIED_ENDPOINTS_MAX = 100;

async function storeEvents(db: Queryable, events: readonly IngestedEvent[], fence: LeaseFence | undefined): Promise<StoredEvents> {
  if (events.length === 0) return { renewed: true, created: 0, endpointIds: [] };
  // The lease row is locked by the renewal until commit: a standby's takeover waits for this batch.
  const lease = fence
    ? `UPDATE webhook_ingest_leases SET expires_at = clock_timestamp() + $11::float8 * interval '1 millisecond'
        WHERE name = $9::text AND epoch = $10::bigint AND expires_at > clock_timestamp()
       RETURNING 1`
    : "SELECT 1";
  const result = await db.query<{ created: number; renewed: number; endpoint_ids: string[] }>(
    `WITH lease AS (
       ${lease}
     ), input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[], $8::text[])
                WITH ORDINALITY AS i (id, merchant_id, resource_id, type, version, occurred_at, body, traceparent, ord)
        WHERE EXISTS (SELECT 1 FROM lease)
     ), event AS (
       INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body, traceparent)
       SELECT id, merchant_id, resource_id, type, version, occurred_at, body, traceparent FROM input ORDER BY ord
       ON CONFLICT (id) DO NOTHING
       RETURNING id
     ), deliveries AS (
       INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version)
       SELECT i.merchant_id, ep.id, i.id, i.resource_id, i.version
         FROM input i
         JOIN event ON event.id = i.id
         JOIN webhook_endpoints ep
           ON ep.merchant_id = i.merchant_id AND ep.status = 'ENABLED'
          AND (cardinality(ep.event_types) = 0 OR i.type = ANY (ep.event_types))
        ORDER BY i.ord, ep.id
       ON CONFLICT (endpoint_id, event_id) DO NOTHING
       RETURNING endpoint_id
     ), endpoints AS (
       SELECT array_agg(DISTINCT endpoint_id) AS ids FROM deliveries
     )
     SELECT (SELECT count(*) FROM deliveries)::int AS created,
            (SELECT count(*) FROM lease)::int AS renewed, (SELECT coalesce(ids, '{}') FROM endpoints) AS endpoint_ids`,
    [
      ...unnestColumns(events, [
        (e) => e.id,
        (e) => e.merchantId,
        (e) => e.resourceId,
        (e) => e.type,
        (e) => e.version.toString(),
        (e) => e.occurredAtExact,
        (e) => e.body,
        (e) => e.traceparent ?? null,
      ]),
      ...(fence ? [fence.name, fence.epoch.toString(), fence.ttlMs] : []),
    ],
  );
  const row = result.rows[0];
  const stored = { renewed: (row?.renewed ?? 0) > 0, created: row?.created ?? 0, endpointIds: row?.endpoint_ids ?? [] };
  if (stored.endpointIds.length > 0) await notifyDeliveries(db, stored.endpointIds);
  return stored;
}

/**
 * Wakes the workers of every replica for new rows of these endpoints, after the rows committed, in a
 * transaction of its own that commits without waiting for its WAL flush. Postgres serialises the
 * commits of all transactions that notify (one database-wide lock from before the commit record until
 * it is flushed): sent in the insert's transaction, each batch's commit would hold that lock through
 * its flush, and every other notifying commit would queue behind it, one flush at a time. A
 * notification is not durable anyway; a crash that loses one costs at most the workers' poll
 * interval. A wake-up that fails fails the call as an insert would: the batch comes back, adds nothing,
 * and the workers' poll finds the rows already stored. The endpoints ride in the payload: a worker
 * holding back claims for a busy endpoint need not walk its due rows again for rows of that same
 * endpoint (delivery-worker.ts).
 */
async function notifyDeliveries(db: Queryable, endpointIds: readonly string[]): Promise<void> {
  const payload = endpointIds.length <= NOTIFIED_ENDPOINTS_MAX ? endpointIds.join(",") : "";
  await db.query("SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)", [DELIVERY_CHANNEL, payload]);
}

/**
 * The change_events rows of the given ids, as @subdata/events reads them (the relay's columns): what
 * ingest checks consumed events against (event-provenance.ts). Ids without a row are absent.
 */
export async function changeEventsByIds(db: Queryable, ids: readonly string[]): Promise<Map<string, ChangeEventRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<ChangeEventRow>(
    `SELECT id, merchant_id, resource_type, resource_id, event_type, version, occurred_at, payload
       FROM change_events WHERE id = ANY ($1::text[])`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * Hands events the stream removed (max_age) before this consumer stored them back to the relay: each
 * change_events row committed before `oldestKept` (the stream's oldest message) without a webhook_events
 * row gets a pending outbox row again (subdata_republish_unstored_events says which window it searches).
 * The relay publishes them again; ingest stores each event id once. At most `maxRows`; returns how many.
 */
export async function republishUnstoredEvents(db: Queryable, oldestKept: Date, streamMaxAgeMs: number, maxRows: number): Promise<number> {
  const result = await db.query<{ handed_back: number }>("SELECT subdata_republish_unstored_events($1, make_interval(secs => $2), $3) AS handed_back", [
    oldestKept,
    streamMaxAgeMs / 1000,
    maxRows,
  ]);
  return result.rows[0]?.handed_back ?? 0;
}
