import { formatTraceparent, parseTraceparent } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { attemptTrace, storedTraceparent } from "./delivery-trace.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const RELAY_SPAN = "00f067aa0ba902b7";
const RELAYED = `00-${TRACE_ID}-${RELAY_SPAN}-01`;
/** The format webhook_events_traceparent_format enforces. */
const STORED_FORMAT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

describe("storedTraceparent", () => {
  it("keeps a valid version-00 traceparent as it is", () => {
    expect(storedTraceparent(RELAYED)).toBe(RELAYED);
    expect(storedTraceparent(`00-${TRACE_ID}-${RELAY_SPAN}-00`)).toBe(`00-${TRACE_ID}-${RELAY_SPAN}-00`);
  });

  it("stores a later version's known fields in the canonical version-00 form, without the extra fields", () => {
    const stored = storedTraceparent(`cc-${TRACE_ID}-${RELAY_SPAN}-01-what-the-future-holds`);
    expect(stored).toBe(RELAYED);
    expect(stored).toMatch(STORED_FORMAT);
  });

  it("stores nothing for a missing or invalid header, which the column's check would refuse", () => {
    for (const header of [
      undefined,
      null,
      "",
      "garbage",
      `00-${TRACE_ID.toUpperCase()}-${RELAY_SPAN}-01`,
      `00-${"0".repeat(32)}-${RELAY_SPAN}-01`,
      `00-${TRACE_ID}-${"0".repeat(16)}-01`,
      `ff-${TRACE_ID}-${RELAY_SPAN}-01`,
      `00-${TRACE_ID}-${RELAY_SPAN}-01-trailing`,
      `00-${TRACE_ID}-${RELAY_SPAN}-01${"x".repeat(500)}`,
    ]) {
      expect(storedTraceparent(header), String(header)).toBeNull();
    }
  });
});

describe("attemptTrace", () => {
  it("continues the event's trace with a new span whose parent is the relay's span", () => {
    const first = attemptTrace(RELAYED);
    const second = attemptTrace(RELAYED);
    expect(first).toMatchObject({ traceId: TRACE_ID, parentSpanId: RELAY_SPAN, flags: "01" });
    expect(second).toMatchObject({ traceId: TRACE_ID, parentSpanId: RELAY_SPAN, flags: "01" });
    expect(first.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(first.spanId).not.toBe(RELAY_SPAN);
    // Every attempt is a span of its own.
    expect(second.spanId).not.toBe(first.spanId);
    expect(formatTraceparent(first)).toBe(`00-${TRACE_ID}-${first.spanId}-01`);
  });

  it("keeps the event's sampling decision", () => {
    expect(attemptTrace(`00-${TRACE_ID}-${RELAY_SPAN}-00`).flags).toBe("00");
  });

  it("starts a new sampled trace per attempt when the event has none or an invalid one", () => {
    const first = attemptTrace(null);
    const second = attemptTrace("not-a-traceparent");
    for (const trace of [first, second]) {
      expect(trace.parentSpanId).toBeUndefined();
      expect(parseTraceparent(formatTraceparent(trace))).toEqual({ traceId: trace.traceId, spanId: trace.spanId, flags: "01" });
    }
    expect(second.traceId).not.toBe(first.traceId);
  });
});
