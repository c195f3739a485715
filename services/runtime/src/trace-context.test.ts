import { describe, expect, it } from "vitest";
import { createCapturedSpans } from "./test-support/captured-spans.ts";
import {
  acceptTraceContext,
  continueTrace,
  createTraceScope,
  formatTraceparent,
  isSampled,
  newSpanId,
  parseTraceparent,
  startTrace,
  traceHeaders,
} from "./trace-context.ts";

const headers = (values: Record<string, string>) => ({ get: (name: string) => values[name] });
const PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("W3C trace context", () => {
  it("parses and formats traceparent, refusing invalid ones", () => {
    expect(parseTraceparent(PARENT)).toEqual({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", flags: "01" });
    expect(formatTraceparent(parseTraceparent(PARENT)!)).toBe(PARENT);
    for (const bad of [
      "",
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
    // A future version may append fields; the known part is still read.
    expect(parseTraceparent(`01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what`)?.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
  });

  it("continues the caller's trace with a span of its own, or starts one", () => {
    const continued = continueTrace(headers({ traceparent: PARENT, tracestate: "vendor=1", "request-id": "req_abc" }));
    expect(continued.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(continued.spanId).not.toBe("b7ad6b7169203331");
    expect(continued).toMatchObject({ tracestate: "vendor=1", requestId: "req_abc" });
    expect(traceHeaders(continued)).toEqual({
      traceparent: `00-${continued.traceId}-${continued.spanId}-01`,
      tracestate: "vendor=1",
      "request-id": "req_abc",
    });
    const started = continueTrace(headers({ traceparent: "garbage", "request-id": "not a request id; drop table" }));
    expect(started.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(started.requestId).toBeUndefined();
    expect(startTrace().traceId).not.toBe(startTrace().traceId);
  });

  it("draws every id from fresh random bytes, across refills of the entropy pool", () => {
    // Each loop takes 16 + 8 + 8 bytes, 96,000 in all: the 4 KB pool is refilled about 23 times on the way.
    const ids = new Set<string>();
    for (let i = 0; i < 3_000; i++) {
      const trace = startTrace();
      expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(trace.spanId).toMatch(/^[0-9a-f]{16}$/);
      ids.add(trace.traceId).add(trace.spanId).add(newSpanId());
    }
    expect(ids.size).toBe(9_000);
  });

  it("keeps the context across awaits inside run(), and nowhere else", async () => {
    const scope = createTraceScope();
    const context = { ...startTrace(), requestId: "req_1" };
    const seen = await scope.run(context, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return scope.logFields();
    });
    expect(seen).toEqual({ traceId: context.traceId, spanId: context.spanId, requestId: "req_1" });
    expect(scope.current()).toBeUndefined();
    expect(scope.logFields()).toEqual({});
  });
});

describe("sampling", () => {
  it("reads the sampled bit of trace-flags", () => {
    expect(["01", "03", "ff"].map(isSampled)).toEqual([true, true, true]);
    expect(["00", "02", "fe"].map(isSampled)).toEqual([false, false, false]);
    expect(["zz", "1z", ""].map(isSampled)).toEqual([true, true, true]);
    expect(isSampled(startTrace().flags)).toBe(true);
  });

  it("marks an RPC's server span unsampled when the caller's trace is not sampled, so the exporter drops it", async () => {
    const { exporter, spans: exported } = createCapturedSpans();
    const interceptor = acceptTraceContext(createTraceScope(), exporter);
    const call = (flags: string) =>
      interceptor(async () => ({}) as never)({
        header: new Headers({ traceparent: `00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-${flags}` }),
        service: { typeName: "subdata.subscription.v1.SubscriptionService" },
        method: { name: "ListSubscriptions" },
      } as never);
    await call("00");
    await call("01");
    expect(exported.map((span) => span.sampled)).toEqual([false, true]);
  });
});
