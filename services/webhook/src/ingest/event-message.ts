import { fromBinary } from "@bufbuild/protobuf";
import { changeEventFromSubscriptionEvent, eventTypeName, renderEventBody, resourceTypeOfSubject } from "@subdata/events";
import { type ChangeEvent, ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
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
  resourceId: string;
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
    resourceId: event.resourceId,
    version: event.version,
    occurredAtExact: timestampToPgText(event.occurredAt!),
    body,
  };
}

/**
 * A consumed message's event, decoded as its subject's resource is published: SubscriptionEvent on
 * `<prefix>.subscription.<merchant_id>`, ChangeEvent on `<prefix>.charge.…` and `<prefix>.order.…`.
 * Throws when it cannot be decoded or rendered, or carries another resource than its subject (poison).
 */
export function renderMessage(subject: string, data: Uint8Array): RenderedEvent {
  const resourceType = resourceTypeOfSubject(subject);
  switch (resourceType) {
    case "subscription":
      return renderedEvent(changeEventFromSubscriptionEvent(fromBinary(SubscriptionEventSchema, data)));
    case "charge":
    case "order": {
      const event = fromBinary(ChangeEventSchema, data);
      if (event.object.case !== resourceType) throw new Error(`a ${resourceType} subject carries a ${event.object.case ?? "empty"} event`);
      return renderedEvent(event);
    }
    default:
      throw new Error(`no events are published on ${subject}`);
  }
}
