import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";

/**
 * The public name of each event type: webhook bodies, the change feed, the outbox, webhook_events,
 * endpoint filters and the CLI all spell types this way. A new event type is added here and nowhere else.
 */
const NAMES = new Map<EventType, string>([
  [EventType.SUBSCRIPTION_CREATED, "subscription.created"],
  [EventType.SUBSCRIPTION_UPDATED, "subscription.updated"],
  [EventType.SUBSCRIPTION_DELETED, "subscription.deleted"],
  [EventType.CHARGE_CREATED, "charge.created"],
  [EventType.CHARGE_UPDATED, "charge.updated"],
  [EventType.CHARGE_DELETED, "charge.deleted"],
  [EventType.ORDER_CREATED, "order.created"],
  [EventType.ORDER_UPDATED, "order.updated"],
  [EventType.ORDER_DELETED, "order.deleted"],
]);
const TYPES = new Map([...NAMES].map(([type, name]) => [name, type]));

/** Every public event type name. */
export const eventTypeNames: readonly string[] = [...NAMES.values()];

/** The public name; undefined for UNSPECIFIED and for types this build does not know. */
export function eventTypeName(type: EventType): string | undefined {
  return NAMES.get(type);
}

/** The type a public name stands for; undefined for a name this build does not know (a newer writer). */
export function eventTypeOf(name: string): EventType | undefined {
  return TYPES.get(name);
}
