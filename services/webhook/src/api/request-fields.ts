import { Code } from "@connectrpc/connect";
import { eventTypeName } from "@subdata/events";
import type { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { ErrorReason, errorWithReason, invalidArgument, isIdWithPrefix } from "@subdata/runtime";

/** A required id field: empty is INVALID_ARGUMENT; returns whether it could name a row with `prefix`. */
export function requireId(field: string, value: string, prefix: string): { id: string; wellFormed: boolean } {
  if (value === "") throw invalidArgument(field, "is required");
  return { id: value, wellFormed: isIdWithPrefix(value, prefix) };
}

/** Scheduling work for a disabled endpoint would only be cancelled: the caller must enable it first. */
export function endpointDisabled() {
  return errorWithReason("the endpoint is disabled; enable it before sending events to it", Code.FailedPrecondition, ErrorReason.INVALID_ARGUMENT);
}

/** The event types an endpoint receives: a set of known types without repeats; empty means every type. */
export function eventTypeNamesOf(types: readonly EventType[], field: string): string[] {
  const names: string[] = [];
  for (const type of types) {
    const name = eventTypeName(type);
    if (name === undefined) throw invalidArgument(field, `${type} is not an event type`);
    if (names.includes(name)) throw invalidArgument(field, `${name} is listed twice`);
    names.push(name);
  }
  return names;
}
