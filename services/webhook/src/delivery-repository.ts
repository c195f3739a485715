import { type Logger, type Pool, type PoolClient, unnestColumns } from "@subdata/runtime";
import type { ClientBase } from "pg";
import type { RenderedEvent } from "./event-body.ts";

/**
 * The SQL of webhook ingest and wake-ups (claims: delivery-claim-repository.ts; recording attempts:
 * delivery-record-repository.ts). Delivery is purely table-driven: a PENDING webhook_deliveries row whose
 * next_attempt_at has passed is delivered, whoever inserted it (the event consumer, ResendEvent,
 * ReplayEvents, SendTestEvent). Inserting one and sending NOTIFY on DELIVERY_CHANNEL wakes the workers
 * of every replica at once; otherwise they find it at their next poll.
 */

export const DELIVERY_CHANNEL = "subdata_webhook_delivery";

/** A pool, or one connection (the ingest leader writes through the connection holding its lock). */
export type Queryable = Pool | ClientBase;

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
                WITH ORDINALITY AS i (id, merchant_id, subscription_id, type, version, occurred_at, body, traceparent, ord)
     ), event AS (
       INSERT INTO webhook_events (id, merchant_id, subscription_id, type, version, occurred_at, body, traceparent)
       SELECT id, merchant_id, subscription_id, type, version, occurred_at, body, traceparent FROM input ORDER BY ord
       ON CONFLICT (id) DO NOTHING
       RETURNING id
     ), deliveries AS (
       INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, subscription_id, version)
       SELECT i.merchant_id, ep.id, i.id, i.subscription_id, i.version
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
      (e) => e.subscriptionId,
      (e) => e.type,
      (e) => e.version.toString(),
      (e) => e.occurredAtExact,
      (e) => e.body,
      (e) => e.traceparent ?? null,
    ]),
  );
  return result.rows[0]?.created ?? 0;
}

export interface DeliveryWakeups {
  close(): Promise<void>;
}

/**
 * LISTENs on DELIVERY_CHANNEL with one pooled connection and calls `onWake` per notification, so rows
 * inserted by any replica or by the RPC handlers are picked up at once. Reconnects after errors;
 * polling covers the gaps.
 */
export function listenForDeliveries(pool: Pool, onWake: () => void, logger: Logger, retryMs = 2_000): DeliveryWakeups {
  let closed = false;
  let client: PoolClient | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

  const connect = async () => {
    try {
      const next = await pool.connect();
      if (closed) {
        next.release();
        return;
      }
      client = next;
      next.on("notification", (message) => {
        if (message.channel === DELIVERY_CHANNEL) onWake();
      });
      next.on("error", (error) => {
        logger.warn({ err: error }, "delivery LISTEN connection failed; reconnecting");
        if (client === next) client = undefined;
        next.release(error);
        scheduleRetry();
      });
      await next.query(`LISTEN ${DELIVERY_CHANNEL}`);
      onWake();
    } catch (error) {
      logger.warn({ err: error }, "could not LISTEN for deliveries; retrying");
      if (client) {
        client.release(error as Error);
        client = undefined;
      }
      scheduleRetry();
    }
  };
  const scheduleRetry = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, retryMs);
  };

  void connect();
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      if (!current) return;
      try {
        await current.query(`UNLISTEN ${DELIVERY_CHANNEL}`);
        current.release();
      } catch (error) {
        current.release(error as Error);
      }
    },
  };
}
