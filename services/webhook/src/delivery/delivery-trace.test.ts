import { formatTraceparent, isSampled, parseTraceparent } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import type { AttemptErrorClass } from "./deliver-webhook.ts";
import { attemptSpan, attemptTrace, storedTraceparent } from "./delivery-trace.ts";

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

describe("attemptSpan", () => {
  const delivery = {
    id: "wd_1",
    endpointId: "we_1",
    eventId: "evt_1",
    attemptNumber: 2,
    // A Slack-style URL: the receiver's secret is in the path, a second one in the query.
    url: "https://user:pw@hooks.example.com:8443/services/T0/B0/path-secret?token=receiver-secret#frag",
  };
  const answered = (status: number | null, errorClass: AttemptErrorClass, startMs = 1_000, latencyMicros = 12_500n) => ({
    status,
    errorClass,
    startedAt: new Date(startMs),
    latencyMicros,
  });

  it("is a CLIENT span under exactly the ids the attempt's traceparent sent, child of the relay's span", () => {
    const trace = attemptTrace(RELAYED);
    const span = attemptSpan(delivery, trace, answered(204, "NONE"));
    const sent = parseTraceparent(formatTraceparent(trace))!;
    expect(span).toEqual({
      traceId: sent.traceId,
      spanId: sent.spanId,
      parentSpanId: RELAY_SPAN,
      name: "POST",
      kind: "client",
      startMs: 1_000,
      endMs: 1_012.5,
      attributes: {
        "http.request.method": "POST",
        // No path, query string, fragment or credentials: any of them may be the receiver's secret.
        "url.scheme": "https",
        "server.address": "hooks.example.com",
        "server.port": 8443,
        "http.response.status_code": 204,
        "subdata.delivery_id": "wd_1",
        "subdata.endpoint_id": "we_1",
        "subdata.event_id": "evt_1",
        "subdata.attempt": 2,
        "subdata.error_class": "NONE",
      },
      error: false,
      sampled: true,
    });
    expect(JSON.stringify(span)).not.toMatch(/path-secret|receiver-secret|user:pw|services/);
  });

  it("marks a refused attempt as an error with its status, and one without a response with its error class", () => {
    const refused = attemptSpan(delivery, attemptTrace(RELAYED), answered(503, "HTTP_STATUS"));
    expect(refused).toMatchObject({ error: true, attributes: { "http.response.status_code": 503, "error.type": "503", "subdata.error_class": "HTTP_STATUS" } });
    const timedOut = attemptSpan(delivery, attemptTrace(RELAYED), answered(null, "TIMEOUT"));
    expect(timedOut).toMatchObject({ error: true, attributes: { "error.type": "TIMEOUT", "subdata.error_class": "TIMEOUT" } });
    expect(timedOut.attributes).not.toHaveProperty("http.response.status_code");
  });

  it("follows the relay's sampling decision", () => {
    expect(attemptSpan(delivery, attemptTrace(RELAYED), answered(204, "NONE")).sampled).toBe(isSampled(parseTraceparent(RELAYED)!.flags));
    const unsampled = RELAYED.replace(/-0[0-9a-f]$/, "-00");
    expect(attemptSpan(delivery, attemptTrace(unsampled), answered(204, "NONE")).sampled).toBe(false);
    expect(attemptSpan(delivery, attemptTrace(null), answered(204, "NONE")).sampled).toBe(true);
  });

  it("has no parent for an event stored without a trace, and a default port and bare IPv6 address when the URL has them", () => {
    const span = attemptSpan({ ...delivery, url: "http://[::1]/hook" }, attemptTrace(null), answered(200, "NONE"));
    expect(span.parentSpanId).toBeUndefined();
    expect(span.attributes).toMatchObject({ "url.scheme": "http", "server.address": "::1", "server.port": 80 });
  });
});
