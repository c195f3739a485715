import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { eventTypeName } from "@subdata/events";
import type { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { ErrorReason, errorWithReason, invalidArgument } from "@subdata/runtime";

// Ids are "prefix_" + 32 hex digits (subdata_new_id); anything else cannot exist, so it answers NOT_FOUND
// without a query. Kept loose (alphanumerics) so ids made by other writers stay addressable.
const ID_BODY = /^[A-Za-z0-9_]{1,64}$/;

/** The same format as subdata_new_id(prefix) in SQL: "prefix_" + 32 hex digits. */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}

/** A required id field: empty is INVALID_ARGUMENT; returns whether it could name a row with `prefix`. */
export function requireId(field: string, value: string, prefix: string): { id: string; wellFormed: boolean } {
  if (value === "") throw invalidArgument(field, "is required");
  return { id: value, wellFormed: value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1)) };
}

/** Scheduling work for a disabled endpoint would only be cancelled: the caller must enable it first. */
export function endpointDisabled() {
  return errorWithReason("the endpoint is disabled; enable it before sending events to it", Code.FailedPrecondition, ErrorReason.INVALID_ARGUMENT);
}

/** An endpoint's subscription: a set of known types without repeats; empty means every type. */
export function eventTypeNamesOf(types: readonly EventType[], field: string): string[] {
  const names: string[] = [];
  for (const type of types) {
    const name = eventTypeName(type);
    if (name === undefined) throw invalidArgument(field, `${type} is not a subscription event type`);
    if (names.includes(name)) throw invalidArgument(field, `${name} is listed twice`);
    names.push(name);
  }
  return names;
}
