import { create } from "@bufbuild/protobuf";
import { type ChangeEvent, ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { type SubscriptionEvent, SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";

/**
 * SubscriptionEvent is how subscription changes travel on JetStream (the message a webhook service of
 * any version understands); ChangeEvent is what every event is rendered from. The two carry the same
 * facts, so converting one way and back loses nothing.
 */

/** The ChangeEvent of a SubscriptionEvent from the stream. */
export function changeEventFromSubscriptionEvent(event: SubscriptionEvent): ChangeEvent {
  return create(ChangeEventSchema, {
    id: event.id,
    type: event.type,
    merchantId: event.merchantId,
    resourceId: event.subscriptionId,
    version: event.version,
    occurredAt: event.occurredAt,
    object: event.subscription ? { case: "subscription", value: event.subscription } : { case: undefined },
    previous: event.previous ? { case: "previousSubscription", value: event.previous } : { case: undefined },
    changedFields: event.changedFields,
  });
}

/** The SubscriptionEvent the relay publishes for a subscription's ChangeEvent. Throws for another resource. */
export function subscriptionEventFromChangeEvent(event: ChangeEvent): SubscriptionEvent {
  if (event.object.case !== "subscription") throw new Error(`event ${event.id} is not a subscription event`);
  return create(SubscriptionEventSchema, {
    id: event.id,
    type: event.type,
    merchantId: event.merchantId,
    subscriptionId: event.resourceId,
    version: event.version,
    occurredAt: event.occurredAt,
    subscription: event.object.value,
    previous: event.previous.case === "previousSubscription" ? event.previous.value : undefined,
    changedFields: event.changedFields,
  });
}
