import { fromBinary } from "@bufbuild/protobuf";
import { changeEventFromSubscriptionEvent, eventTypeName, renderEventBody } from "@subdata/events";
import type { ChangeEvent } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { timestampToPgText } from "@subdata/runtime";

/**
 * What ingest stores of a consumed event: its columns and the Standard Webhooks body, rendered once by
 * @subdata/events (the renderer the change feed uses too, so a webhook and the feed item of an event
 * are the same bytes). Every attempt, resend and replay sends exactly this body.
 */
export interface RenderedEvent {
  id: string;
  type: string;
  merchantId: string;
  subscriptionId: string;
  version: bigint;
  /** Exact (microseconds) text for the webhook_events column. */
  occurredAtExact: string;
  /** The exact JSON text sent as the request body. */
  body: string;
}

/** The stored form of an event. Throws when the event is malformed (missing id, object or time, unknown enum values). */
export function renderedEvent(event: ChangeEvent): RenderedEvent {
  const body = renderEventBody(event);
  return {
    id: event.id,
    type: eventTypeName(event.type)!,
    merchantId: event.merchantId,
    subscriptionId: event.resourceId,
    version: event.version,
    occurredAtExact: timestampToPgText(event.occurredAt!),
    body,
  };
}

/** A consumed message's event. Throws when it cannot be decoded or rendered (poison). */
export function renderMessage(data: Uint8Array): RenderedEvent {
  return renderedEvent(changeEventFromSubscriptionEvent(fromBinary(SubscriptionEventSchema, data)));
}
