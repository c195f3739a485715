import { toBinary } from "@bufbuild/protobuf";
import { changeEventFromRow, type ChangeEventRow, subscriptionEventFromChangeEvent } from "@subdata/events";
import { ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";

/** A claimed event_outbox row with its change_events row (int8 as bigint, timestamptz as Postgres text). */
export interface OutboxRow extends ChangeEventRow {
  seq: bigint;
  attempts: number;
}

/**
 * The message the relay publishes for an outbox row: a subscription's as SubscriptionEvent (the message
 * every webhook service version consumes), a charge's or an order's as ChangeEvent. Both are made by
 * @subdata/events from the stored event. Throws on a row it cannot represent.
 */
export function outboxMessage(row: OutboxRow): Uint8Array {
  const event = changeEventFromRow(row);
  return row.resource_type === "subscription" ? toBinary(SubscriptionEventSchema, subscriptionEventFromChangeEvent(event)) : toBinary(ChangeEventSchema, event);
}
