import type { Pool } from "@subdata/runtime";
import type { DeliveryRow } from "./delivery-query-repository.ts";

/**
 * Schedules work for the delivery pipeline by writing rows: a PENDING delivery whose next_attempt_at has
 * passed is picked up by its workers, and webhook_events.body is the exact body they send. Every statement
 * joins the endpoint on (merchant_id, id), so no row of another merchant is ever touched.
 */
export interface DeliveryScheduleRepository {
  /** Undefined when the endpoint is not the merchant's or the event is not. */
  resend(merchantId: string, endpointId: string, eventId: string): Promise<DeliveryRow | undefined>;
  /**
   * Schedules the merchant's events with occurred_at in [start, end) that the endpoint subscribes to (test
   * events excluded), in (occurred_at, id) order. Nothing is scheduled, and `exceeded` is true, when more
   * than `max` events match.
   */
  replay(query: ReplayQuery): Promise<{ scheduled: number; exceeded: boolean }>;
  /** Stores a synthetic event and one PENDING delivery of it; undefined when the endpoint is not the merchant's. */
  insertTestEvent(event: TestEventRow): Promise<{ deliveryId: string; eventId: string } | undefined>;
}

export interface ReplayQuery {
  merchantId: string;
  endpointId: string;
  /** Exact timestamptz text. */
  start: string;
  end: string;
  max: number;
}

export interface TestEventRow {
  merchantId: string;
  endpointId: string;
  eventId: string;
  deliveryId: string;
  resourceId: string;
  type: string;
  version: bigint;
  /** RFC 3339. */
  occurredAt: string;
  body: string;
}

/** Resource ids of test events (a made-up subscription) start with this; real ids are "sub_" + hex and never do. */
export const TEST_SUBSCRIPTION_PREFIX = "sub_test_";

// A delivery scheduled again keeps its row, attempt_count and attempt history; only its state resets.
const RESCHEDULE = `ON CONFLICT (endpoint_id, event_id) DO UPDATE
  SET status = 'PENDING', next_attempt_at = EXCLUDED.next_attempt_at, delivered_at = NULL`;

export function createDeliveryScheduleRepository(pool: Pool): DeliveryScheduleRepository {
  return {
    async resend(merchantId, endpointId, eventId) {
      const result = await pool.query<DeliveryRow>(
        `WITH scheduled AS (
           INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version, next_attempt_at)
           SELECT e.merchant_id, w.id, e.id, e.resource_id, e.version, now()
           FROM webhook_endpoints w JOIN webhook_events e ON e.merchant_id = w.merchant_id
           WHERE w.merchant_id = $1 AND w.id = $2 AND e.id = $3
           ${RESCHEDULE}
           RETURNING *
         )
         SELECT d.id, d.endpoint_id, d.event_id, e.type AS event_type, d.resource_id, d.version, d.status,
           d.attempt_count, d.next_attempt_at, d.last_attempt_at, d.delivered_at, d.created_at
         FROM scheduled d JOIN webhook_events e ON e.id = d.event_id`,
        [merchantId, endpointId, eventId],
      );
      return result.rows[0];
    },

    async replay(query) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        // next_attempt_at steps by a microsecond per event so workers that claim by due time take them
        // in the order they occurred; per-resource order is kept by version regardless.
        const result = await client.query(
          `WITH events AS (
             SELECT e.id, e.resource_id, e.version, row_number() OVER (ORDER BY e.occurred_at, e.id) AS position
             FROM webhook_events e
             JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id AND w.id = $2
             WHERE e.merchant_id = $1
               AND e.occurred_at >= $3::timestamptz AND e.occurred_at < $4::timestamptz
               AND (cardinality(w.event_types) = 0 OR e.type = ANY (w.event_types))
               AND e.resource_id NOT LIKE '${TEST_SUBSCRIPTION_PREFIX.replaceAll("_", "\\_")}%'
             ORDER BY e.occurred_at, e.id
             LIMIT $5
           )
           INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version, next_attempt_at)
           SELECT $1, $2, id, resource_id, version, now() + position * interval '1 microsecond'
           FROM events ORDER BY position
           ${RESCHEDULE}`,
          [query.merchantId, query.endpointId, query.start, query.end, query.max + 1],
        );
        const scheduled = result.rowCount ?? 0;
        if (scheduled > query.max) {
          await client.query("ROLLBACK");
          return { scheduled: 0, exceeded: true };
        }
        await client.query("COMMIT");
        return { scheduled, exceeded: false };
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },

    async insertTestEvent(event) {
      // Event and delivery in one statement: the foreign key is checked at its end, when both exist.
      const result = await pool.query<{ delivery_id: string; event_id: string }>(
        `WITH event AS (
           INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body)
           SELECT $3, w.merchant_id, $5, $6, $7::bigint, $8::timestamptz, $9
           FROM webhook_endpoints w WHERE w.merchant_id = $1 AND w.id = $2
           RETURNING id, merchant_id, resource_id, version
         )
         INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, resource_id, version)
         SELECT $4, merchant_id, $2, id, resource_id, version FROM event
         RETURNING id AS delivery_id, event_id`,
        [
          event.merchantId,
          event.endpointId,
          event.eventId,
          event.deliveryId,
          event.resourceId,
          event.type,
          event.version.toString(),
          event.occurredAt,
          event.body,
        ],
      );
      const row = result.rows[0];
      return row === undefined ? undefined : { deliveryId: row.delivery_id, eventId: row.event_id };
    },
  };
}
