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

/** One hour of an endpoint's attempts (hours without any are absent). */
export interface AttemptHourRow {
  /** 0 for the window's first hour. */
  hour_index: number;
  succeeded: number;
  failed: number;
  p50_micros: bigint;
  p95_micros: bigint;
}

/** The read side of deliveries; every query is merchant-scoped. */
export interface DeliveryQueryRepository {
  listDeliveries(query: DeliveryListQuery): Promise<DeliveryRow[]>;
  findDelivery(merchantId: string, id: string): Promise<DeliveryRow | undefined>;
  /** Oldest first, strictly after (started_at, id). */
  listAttempts(merchantId: string, deliveryId: string, after: KeysetCursor | null, limit: number): Promise<AttemptRow[]>;
  /** The endpoint's attempts that started in [start, end), counted per hour from start. */
  summarizeAttempts(merchantId: string, endpointId: string, start: string, end: string): Promise<AttemptHourRow[]>;
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

    async summarizeAttempts(merchantId, endpointId, start, end) {
      // A delivery's last_attempt_at is its latest claim, made just before that attempt starts: the
      // hour of slack keeps an attempt claimed before the window and started in it.
      const result = await db.query<AttemptHourRow>(
        `SELECT floor(extract(epoch FROM a.started_at - $3::timestamptz) / 3600)::int AS hour_index,
                count(*) FILTER (WHERE a.response_status BETWEEN 200 AND 299)::int AS succeeded,
                count(*) FILTER (WHERE a.response_status IS NULL OR a.response_status NOT BETWEEN 200 AND 299)::int AS failed,
                percentile_disc(0.5) WITHIN GROUP (ORDER BY a.latency_micros) AS p50_micros,
                percentile_disc(0.95) WITHIN GROUP (ORDER BY a.latency_micros) AS p95_micros
         FROM webhook_deliveries d
         JOIN webhook_attempts a ON a.delivery_id = d.id AND a.merchant_id = d.merchant_id
         WHERE d.merchant_id = $1 AND d.endpoint_id = $2
           AND d.last_attempt_at >= $3::timestamptz - interval '1 hour'
           AND a.started_at >= $3::timestamptz AND a.started_at < $4::timestamptz
         GROUP BY 1 ORDER BY 1`,
        [merchantId, endpointId, start, end],
      );
      return result.rows;
    },
  };
}
