import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { invalidArgument } from "@subdata/runtime";

/** The public names webhook bodies and the database use for each event type. */
const NAMES = new Map<EventType, string>([
  [EventType.SUBSCRIPTION_CREATED, "subscription.created"],
  [EventType.SUBSCRIPTION_UPDATED, "subscription.updated"],
  [EventType.SUBSCRIPTION_DELETED, "subscription.deleted"],
]);
const TYPES = new Map([...NAMES].map(([type, name]) => [name, type]));

export function eventTypeName(type: EventType): string | undefined {
  return NAMES.get(type);
}

/** UNSPECIFIED for a name this build does not know (a newer writer), rather than failing a whole list. */
export function eventTypeOf(name: string): EventType {
  return TYPES.get(name) ?? EventType.UNSPECIFIED;
}

/** An endpoint's subscription: a set of known types without repeats; empty means every type. */
export function eventTypeNamesOf(types: readonly EventType[], field: string): string[] {
  const names: string[] = [];
  for (const type of types) {
    const name = NAMES.get(type);
    if (name === undefined) throw invalidArgument(field, `${type} is not a subscription event type`);
    if (names.includes(name)) throw invalidArgument(field, `${name} is listed twice`);
    names.push(name);
  }
  return names;
}
