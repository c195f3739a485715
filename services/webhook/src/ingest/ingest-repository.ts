import type { ChangeEventRow } from "@subdata/events";
import { type Queryable, unnestColumns } from "@subdata/runtime";
import { DELIVERY_CHANNEL } from "../delivery/delivery-wakeups.ts";
import type { RenderedEvent } from "./event-message.ts";

/**
 * The SQL of webhook ingest: events and the deliveries they make. Delivery is purely table-driven (a
 * PENDING webhook_deliveries row whose next_attempt_at has passed is delivered, whoever inserted it), so
 * ingest only inserts rows and sends NOTIFY on DELIVERY_CHANNEL to wake the workers of every replica.
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
 * event's merchant that wants its type, in one statement: one transaction, one round trip, one NOTIFY
 * (only if deliveries were created). Deliveries are made only for events this statement inserted, so
 * a redelivered event adds nothing — not even for an endpoint created since the event was first
 * stored, which must not receive an old version after newer ones. Returns how many deliveries were
 * created.
 */
export async function ingestEvents(db: Queryable, events: readonly IngestedEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const result = await db.query<{ created: number }>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[], $8::text[])
                WITH ORDINALITY AS i (id, merchant_id, resource_id, type, version, occurred_at, body, traceparent, ord)
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
       RETURNING 1
     ), notified AS (
       SELECT pg_notify('${DELIVERY_CHANNEL}', '') FROM (SELECT 1 FROM deliveries LIMIT 1) AS any_delivery
     )
     SELECT (SELECT count(*) FROM deliveries)::int AS created, (SELECT count(*) FROM notified)::int AS notified`,
    unnestColumns(events, [
      (e) => e.id,
      (e) => e.merchantId,
      (e) => e.resourceId,
      (e) => e.type,
      (e) => e.version.toString(),
      (e) => e.occurredAtExact,
      (e) => e.body,
      (e) => e.traceparent ?? null,
    ]),
  );
  return result.rows[0]?.created ?? 0;
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
