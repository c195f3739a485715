import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { createCapturedSpans } from "./test-support/captured-spans.ts";
import { acceptTraceContext, createTraceScope, type RequestTrace, requestIdFrom, sendTraceContext } from "./trace-context.ts";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";
const parent = (flags: string) => `00-${TRACE_ID}-${CALLER_SPAN}-${flags}`;

/**
 * One RPC through the server interceptor whose handler makes one onward call through the client
 * interceptor: what the handler's scope held, and the headers the onward call carried.
 */
async function serveAndForward(incoming: Record<string, string>, typeName = "subdata.subscription.v1.SubscriptionService") {
  const captured = createCapturedSpans();
  const scope = createTraceScope();
  let inside: RequestTrace | undefined;
  let forwarded = new Headers();
  const onward = sendTraceContext(
    scope,
    captured.tracing,
  )(async (request) => {
    forwarded = request.header;
    return {} as never;
  });
  await acceptTraceContext(
    scope,
    captured.tracing,
  )(async () => {
    inside = scope.current();
    await onward({ header: new Headers() } as never);
    return {} as never;
  })({ header: new Headers(incoming), service: { typeName }, method: { name: "ListSubscriptions" } } as never);
  return { spans: captured.spans, inside: inside!, forwarded };
}

describe("W3C trace context across an RPC", () => {
  it("serves the call as a SERVER span, a child of the caller's, and names that span as the next hop's parent", async () => {
    const { spans, inside, forwarded } = await serveAndForward({ traceparent: parent("01"), tracestate: "vendor=1", "request-id": "req_abc" });
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: CALLER_SPAN,
      kind: "server",
      name: "subdata.subscription.v1.SubscriptionService/ListSubscriptions",
      attributes: { "rpc.system": "connect_rpc", "rpc.method": "ListSubscriptions", "rpc.connect_rpc.error_code": "ok" },
      error: false,
    });
    expect(inside.requestId).toBe("req_abc");
    expect(trace.getSpanContext(inside.context)?.spanId).toBe(spans[0]!.spanId);
    expect(forwarded.get("traceparent")).toBe(`00-${TRACE_ID}-${spans[0]!.spanId}-01`);
    expect(forwarded.get("tracestate")).toBe("vendor=1");
    expect(forwarded.get("request-id")).toBe("req_abc");
  });

  it("starts a trace when the caller's traceparent is missing or invalid, and drops a request id that does not look like one", async () => {
    for (const traceparent of [
      "garbage",
      `00-${"0".repeat(32)}-${CALLER_SPAN}-01`,
      `ff-${TRACE_ID}-${CALLER_SPAN}-01`,
      `00-${TRACE_ID.toUpperCase()}-${CALLER_SPAN}-01`,
    ]) {
      const { spans, inside, forwarded } = await serveAndForward({ traceparent, "request-id": "not a request id; drop table" });
      expect(spans[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(spans[0]!.traceId).not.toBe(TRACE_ID);
      expect(spans[0]!.parentSpanId).toBeUndefined();
      expect(inside.requestId).toBeUndefined();
      expect(forwarded.get("request-id")).toBeNull();
      expect(forwarded.get("traceparent")).toBe(`00-${spans[0]!.traceId}-${spans[0]!.spanId}-01`);
    }
    expect(requestIdFrom({ get: () => "req_0123456789" })).toBe("req_0123456789");
  });

  it("follows the caller's sampling decision: nothing recorded, yet the trace and its flags travel on with a span id of ours", async () => {
    const { spans, forwarded } = await serveAndForward({ traceparent: parent("00") });
    expect(spans).toEqual([]);
    const [, traceId, spanId, flags] = forwarded.get("traceparent")!.split("-");
    expect({ traceId, flags }).toEqual({ traceId: TRACE_ID, flags: "00" });
    expect(spanId).not.toBe(CALLER_SPAN);
  });

  it("makes no span for health checks, which still run in the caller's trace", async () => {
    const { spans, forwarded } = await serveAndForward({ traceparent: parent("01") }, "grpc.health.v1.Health");
    expect(spans).toEqual([]);
    expect(forwarded.get("traceparent")).toBe(parent("01"));
  });

  it("keeps the context across awaits inside run(), and nowhere else", async () => {
    const { tracing } = createCapturedSpans();
    const scope = createTraceScope();
    const span = tracing.tracer.startSpan("work", {}, ROOT_CONTEXT);
    const seen = await scope.run({ context: trace.setSpan(ROOT_CONTEXT, span), requestId: "req_1" }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return scope.logFields();
    });
    expect(seen).toEqual({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId, requestId: "req_1" });
    expect(scope.current()).toBeUndefined();
    expect(scope.logFields()).toEqual({});
  });
});
