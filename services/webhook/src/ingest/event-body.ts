import { eventTypeName } from "@subdata/events";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import type { SubscriptionEvent } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { previousAttributes, renderSubscription, timestampToPgText, timestampToRfc3339Millis } from "@subdata/runtime";

/**
 * The Standard Webhooks payload of a subscription event. It is rendered once, when the event is
 * consumed, and stored: every attempt, resend and replay sends exactly these bytes. The object is
 * rendered by @subdata/runtime, the same code the REST API uses, so both show identical subscriptions.
 */

export interface RenderedEvent {
  id: string;
  type: string;
  merchantId: string;
  subscriptionId: string;
  version: bigint;
  /** RFC 3339 with milliseconds, as in the body. */
  occurredAt: string;
  /** Exact (microseconds) text for the webhook_events column. */
  occurredAtExact: string;
  /** The exact JSON text sent as the request body. */
  body: string;
}

/** Throws when the event is malformed (missing id, subscription or time, unknown enum values). */
export function renderEventBody(event: SubscriptionEvent): RenderedEvent {
  if (!event.id || !event.merchantId || !event.subscriptionId) throw new Error("event lacks id, merchant_id or subscription_id");
  if (!event.subscription) throw new Error(`event ${event.id} has no subscription`);
  if (!event.occurredAt) throw new Error(`event ${event.id} has no occurred_at`);
  const type = eventTypeName(event.type);
  if (type === undefined) throw new Error(`event type is unspecified or unknown: ${event.type}`);
  const occurredAt = timestampToRfc3339Millis(event.occurredAt);
  const previous =
    event.type === EventType.SUBSCRIPTION_UPDATED && event.previous
      ? previousAttributes(renderSubscription(event.previous), event.changedFields?.paths ?? [])
      : {};
  const body = JSON.stringify({
    id: event.id,
    type,
    timestamp: occurredAt,
    data: { object: renderSubscription(event.subscription), previous_attributes: previous },
  });
  return {
    id: event.id,
    type,
    merchantId: event.merchantId,
    subscriptionId: event.subscriptionId,
    version: event.version,
    occurredAt,
    occurredAtExact: timestampToPgText(event.occurredAt),
    body,
  };
}
