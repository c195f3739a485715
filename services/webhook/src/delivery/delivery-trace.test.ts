import { createCapturedSpans } from "@subdata/runtime/test-support";
import { describe, expect, it } from "vitest";
import type { AttemptErrorClass } from "./deliver-webhook.ts";
import { endAttemptSpan, startAttemptSpan, storedTraceparent } from "./delivery-trace.ts";

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

describe("attempt spans", () => {
  const delivery = {
    id: "wd_1",
    endpointId: "we_1",
    eventId: "evt_1",
    attemptNumber: 2,
    // A Slack-style URL: the receiver's secret is in the path, a second one in the query.
    url: "https://user:pw@hooks.example.com:8443/services/T0/B0/path-secret?token=receiver-secret#frag",
    traceparent: RELAYED as string | null,
  };
  /** Starts and ends one attempt's span; what was sent and what was exported. */
  function attempt(overrides: Partial<typeof delivery>, result: { status: number | null; errorClass: AttemptErrorClass }) {
    const { tracing, spans } = createCapturedSpans();
    const started = startAttemptSpan(tracing, { ...delivery, ...overrides });
    endAttemptSpan(started.span, result);
    const [, traceId, spanId, flags] = started.traceparent.split("-");
    return { sent: { traceId, spanId, flags }, traceparent: started.traceparent, spans };
  }

  it("is a CLIENT span under exactly the ids the attempt's traceparent sent, child of the relay's span", () => {
    const { sent, traceparent, spans } = attempt({}, { status: 204, errorClass: "NONE" });
    expect(traceparent).toMatch(STORED_FORMAT);
    expect(sent).toMatchObject({ traceId: TRACE_ID, flags: "01" });
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({ traceId: TRACE_ID, spanId: sent.spanId, parentSpanId: RELAY_SPAN, name: "POST", kind: "client", error: false });
    expect(spans[0]!.attributes).toEqual({
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
    });
    expect(JSON.stringify(spans)).not.toMatch(/path-secret|receiver-secret|user:pw|services/);
  });

  it("is a span of its own for every attempt", () => {
    expect(attempt({}, { status: 204, errorClass: "NONE" }).sent.spanId).not.toBe(attempt({}, { status: 204, errorClass: "NONE" }).sent.spanId);
  });

  it("marks a refused attempt as an error with its status, and one without a response with its error class", () => {
    const [refused] = attempt({}, { status: 503, errorClass: "HTTP_STATUS" }).spans;
    expect(refused).toMatchObject({ error: true, attributes: { "http.response.status_code": 503, "error.type": "503", "subdata.error_class": "HTTP_STATUS" } });
    const [timedOut] = attempt({}, { status: null, errorClass: "TIMEOUT" }).spans;
    expect(timedOut).toMatchObject({ error: true, attributes: { "error.type": "TIMEOUT", "subdata.error_class": "TIMEOUT" } });
    expect(timedOut!.attributes).not.toHaveProperty("http.response.status_code");
  });

  it("follows the relay's sampling decision: an unsampled event's attempts are not recorded, and say so downstream", () => {
    const unsampled = attempt({ traceparent: `00-${TRACE_ID}-${RELAY_SPAN}-00` }, { status: 204, errorClass: "NONE" });
    expect(unsampled.spans).toEqual([]);
    expect(unsampled.sent).toMatchObject({ traceId: TRACE_ID, flags: "00" });
  });

  it("starts a new sampled trace per attempt when the event has none or an invalid one", () => {
    const first = attempt({ traceparent: null }, { status: 200, errorClass: "NONE" });
    const second = attempt({ traceparent: "not-a-traceparent" }, { status: 200, errorClass: "NONE" });
    for (const { sent, spans } of [first, second]) {
      expect(sent.flags).toBe("01");
      expect(spans[0]).toMatchObject({ traceId: sent.traceId, spanId: sent.spanId, parentSpanId: undefined });
    }
    expect(second.sent.traceId).not.toBe(first.sent.traceId);
  });

  it("keeps a default port and a bare IPv6 address when the URL has them, and no URL parts when it cannot be parsed", () => {
    const [span] = attempt({ url: "http://[::1]/hook" }, { status: 200, errorClass: "NONE" }).spans;
    expect(span!.attributes).toMatchObject({ "url.scheme": "http", "server.address": "::1", "server.port": 80 });
    const [unparsable] = attempt({ url: "not a url" }, { status: null, errorClass: "CONNECTION" }).spans;
    expect(unparsable!.attributes).not.toHaveProperty("server.address");
  });
});
