import { tracingFromEnv } from "@subdata/runtime";
import { createCapturedLogger, createCapturedSpans } from "@subdata/runtime/test-support";
import { describe, expect, it, vi } from "vitest";
import type { ConsumedMessage } from "./event-consumer.ts";
import { recordIngestSpans } from "./event-ingester.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PUBLISH_SPAN = "00f067aa0ba902b7";
const message = (seq: number, traceparent: string | undefined, redelivered = false): ConsumedMessage => ({
  data: new Uint8Array(),
  subject: "subdata.events.subscription.mer_1",
  seq,
  redelivered,
  traceparent,
});

/** The spans recordIngestSpans makes for one stored (or failed) batch. */
function ingestSpans(messages: ConsumedMessage[], eventIds: string[], stored: number[], store: { startMs: number; error?: unknown }) {
  const { tracing, spans } = createCapturedSpans();
  recordIngestSpans(tracing, messages, eventIds, stored, store);
  return spans;
}

describe("recordIngestSpans", () => {
  const relayed = `00-${TRACE_ID}-${PUBLISH_SPAN}-01`;

  it("makes one CONSUMER span per consumed message with a trace, a child of its publish, marking an in-batch copy", () => {
    const messages = [message(7, relayed), message(8, undefined), message(9, relayed, true)];
    const startMs = Date.now() - 4;
    const spans = ingestSpans(messages, ["evt_a", "evt_b", "evt_a"], [0, 1, 2], { startMs });
    expect(spans).toHaveLength(2);
    expect(spans[0]).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: PUBLISH_SPAN,
      kind: "consumer",
      name: "process subdata.events.subscription.{merchant_id}",
      startMs,
      error: false,
      attributes: { "messaging.message.id": "evt_a", "messaging.batch.message_count": 3, "subdata.stream_seq": 7, "subdata.redelivered": false },
    });
    expect(spans[0]!.attributes).not.toHaveProperty("subdata.duplicate");
    expect(spans[1]!.attributes).toMatchObject({ "messaging.message.id": "evt_a", "subdata.duplicate": true, "subdata.redelivered": true });
    expect(spans[0]!.spanId).not.toBe(spans[1]!.spanId);
    // The batch's store, from its start to now.
    expect(spans[0]!.endMs).toBeGreaterThanOrEqual(startMs);
  });

  it("marks every span of a batch that could not be stored as an error, with the database's code", () => {
    const failure = Object.assign(new Error("connection lost"), { code: "57P01" });
    const [span] = ingestSpans([message(1, relayed)], ["evt_a"], [0], { startMs: Date.now(), error: failure });
    expect(span).toMatchObject({ error: true, attributes: { "error.type": "57P01" } });
  });

  it("makes no span when nothing exports them (no OTLP endpoint)", () => {
    const tracing = tracingFromEnv({}, "subdata-webhook", createCapturedLogger({ name: "test", level: "warn" }).logger);
    const startSpan = vi.spyOn(tracing.tracer, "startSpan");
    recordIngestSpans(tracing, [message(1, relayed)], ["evt_a"], [0], { startMs: Date.now() });
    expect(tracing.exporting).toBe(false);
    expect(startSpan).not.toHaveBeenCalled();
  });

  it("follows the publish's sampling decision", () => {
    expect(ingestSpans([message(1, `00-${TRACE_ID}-${PUBLISH_SPAN}-00`)], ["evt_a"], [0], { startMs: Date.now() })).toEqual([]);
  });
});
