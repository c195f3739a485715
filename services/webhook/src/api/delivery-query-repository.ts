import type { KeysetCursor, Queryable } from "@subdata/runtime";

export type DeliveryStatusText = "PENDING" | "SUCCEEDED" | "FAILED" | "CANCELLED";

/** A delivery with its event's type, timestamps as exact Postgres text. */
export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  resource_id: string;
  version: bigint;
  status: DeliveryStatusText;
  attempt_count: number;
  next_attempt_at: string;
  last_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  attempt_number: number;
  started_at: string;
  latency_micros: bigint;
  response_status: number | null;
  error_class: string;
  response_body: string;
}

export interface DeliveryListQuery {
  merchantId: string;
  endpointId: string;
  status: DeliveryStatusText | null;
  /** Newest first: the page starts strictly before this (created_at, id). */
  before: KeysetCursor | null;
  limit: number;
}

/** The read side of deliveries; every query is merchant-scoped. */
export interface DeliveryQueryRepository {
  listDeliveries(query: DeliveryListQuery): Promise<DeliveryRow[]>;
  findDelivery(merchantId: string, id: string): Promise<DeliveryRow | undefined>;
  /** Oldest first, strictly after (started_at, id). */
  listAttempts(merchantId: string, deliveryId: string, after: KeysetCursor | null, limit: number): Promise<AttemptRow[]>;
}

const DELIVERY_COLUMNS = `d.id, d.endpoint_id, d.event_id, e.type AS event_type, d.resource_id, d.version, d.status,
  d.attempt_count, d.next_attempt_at, d.last_attempt_at, d.delivered_at, d.created_at`;

export function createDeliveryQueryRepository(db: Queryable): DeliveryQueryRepository {
  return {
    async listDeliveries(query) {
      const result = await db.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS}
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
         WHERE d.merchant_id = $1 AND d.endpoint_id = $2
           AND ($3::webhook_delivery_status IS NULL OR d.status = $3::webhook_delivery_status)
           AND ($4::timestamptz IS NULL OR (d.created_at, d.id) < ($4::timestamptz, $5::text))
         ORDER BY d.created_at DESC, d.id DESC LIMIT $6`,
        [query.merchantId, query.endpointId, query.status, query.before?.at ?? null, query.before?.id ?? null, query.limit],
      );
      return result.rows;
    },

    async findDelivery(merchantId, id) {
      const result = await db.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS}
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
         WHERE d.merchant_id = $1 AND d.id = $2`,
        [merchantId, id],
      );
      return result.rows[0];
    },

    async listAttempts(merchantId, deliveryId, after, limit) {
      const result = await db.query<AttemptRow>(
        `SELECT id, delivery_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body
         FROM webhook_attempts
         WHERE merchant_id = $1 AND delivery_id = $2
           AND ($3::timestamptz IS NULL OR (started_at, id) > ($3::timestamptz, $4::text))
         ORDER BY started_at, id LIMIT $5`,
        [merchantId, deliveryId, after?.at ?? null, after?.id ?? null, limit],
      );
      return result.rows;
    },
  };
}
