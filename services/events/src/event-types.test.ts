import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { describe, expect, it } from "vitest";
import { eventTypeName, eventTypeNames, eventTypeOf } from "./event-types.ts";

describe("event type names", () => {
  it("name every event type of the proto but UNSPECIFIED, and read back to the same type", () => {
    const types = Object.values(EventType).filter((value): value is EventType => typeof value === "number" && value !== EventType.UNSPECIFIED);
    expect(types.length).toBeGreaterThan(0);
    for (const type of types) expect(eventTypeOf(eventTypeName(type) ?? "")).toBe(type);
    expect(eventTypeNames).toHaveLength(types.length);
  });

  it("know no name for UNSPECIFIED and no type for an unknown name or an Object member", () => {
    expect(eventTypeName(EventType.UNSPECIFIED)).toBeUndefined();
    for (const name of ["subscription.paused", "__proto__", "toString", ""]) expect(eventTypeOf(name)).toBeUndefined();
  });
});
