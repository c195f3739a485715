import { changeEventFromRow, type SubscriptionSnapshot, subscriptionEventFromChangeEvent } from "@subdata/events";
import type { SubscriptionEvent } from "@subdata/proto/subdata/events/v1/subscription_event_pb";

export interface OutboxPayload {
  subscription: SubscriptionSnapshot;
  previous: SubscriptionSnapshot | null;
  changed_columns: string[];
}

/** One event_outbox row as the relay reads it (int8 as bigint, timestamptz as Postgres text). */
export interface OutboxRow {
  id: string;
  seq: bigint;
  merchant_id: string;
  subscription_id: string;
  event_type: string;
  version: bigint;
  occurred_at: string;
  payload: OutboxPayload;
  attempts: number;
}

/** The message the relay publishes for an outbox row, made by @subdata/events. Throws on a row it cannot represent. */
export function outboxRowToEvent(row: OutboxRow): SubscriptionEvent {
  return subscriptionEventFromChangeEvent(
    changeEventFromRow({
      id: row.id,
      merchant_id: row.merchant_id,
      resource_type: "subscription",
      resource_id: row.subscription_id,
      event_type: row.event_type,
      version: row.version,
      occurred_at: row.occurred_at,
      payload: { object: row.payload.subscription, previous: row.payload.previous, changed_columns: row.payload.changed_columns },
    }),
  );
}
