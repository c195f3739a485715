import { AsyncLocalStorage } from "node:async_hooks";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { type Context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { connectCodeName } from "./errors.ts";
import { type HeaderLookup, spanIds, type Tracing } from "./tracing.ts";

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) across our hops: the gateway accepts or
 * starts a `traceparent`, every hop forwards it (naming its own span as the parent) together with
 * `tracestate` and our `request-id`, and every log line written while serving a request carries
 * `traceId`, `spanId` and `requestId`. The spans come from the OpenTelemetry SDK (tracing.ts).
 */

/** What a request runs in: its span's context, and the gateway's Request-Id (req_…) when the work started there. */
export interface RequestTrace {
  context: Context;
  requestId?: string;
}

const REQUEST_ID_HEADER = "request-id";
const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A caller's request id, kept only when it looks like one (it ends up in logs). */
export function requestIdFrom(headers: HeaderLookup): string | undefined {
  const requestId = headers.get(REQUEST_ID_HEADER);
  return requestId && REQUEST_ID.test(requestId) ? requestId : undefined;
}

/**
 * Where the current request's trace lives while it is served. One per process, made in main.ts and
 * handed to the logger (logFields), the server (run) and the clients (current). Our own
 * AsyncLocalStorage rather than a globally registered OpenTelemetry context manager.
 */
export interface TraceScope {
  run<T>(request: RequestTrace, fn: () => T): T;
  current(): RequestTrace | undefined;
  /** For pino's mixin: the fields every log line inside a request gets. */
  logFields(): { traceId?: string; spanId?: string; requestId?: string };
}

export function createTraceScope(): TraceScope {
  const storage = new AsyncLocalStorage<RequestTrace>();
  return {
    run: (request, fn) => storage.run(request, fn),
    current: () => storage.getStore(),
    logFields() {
      const request = storage.getStore();
      if (!request) return {};
      return { ...spanIds(request.context), ...(request.requestId ? { requestId: request.requestId } : {}) };
    },
  };
}

/** Probes are frequent and say nothing about a request: no spans for them. */
const UNTRACED_SERVICES = new Set(["grpc.health.v1.Health"]);

/** Connect codes that mean the server failed (OTel RPC conventions: a span's status is an error only for those). */
const SERVER_FAULTS = new Set([Code.Internal, Code.Unknown, Code.Unavailable, Code.DataLoss, Code.Unimplemented, Code.DeadlineExceeded]);

/** Server side: every RPC is a SERVER span, a child of the caller's (or the root of a new trace), and runs in it. */
export function acceptTraceContext(scope: TraceScope, tracing: Tracing): Interceptor {
  return (next) => (request) => {
    const parent = tracing.extract(request.header);
    const requestId = requestIdFrom(request.header);
    const withRequestId = requestId ? { requestId } : {};
    if (UNTRACED_SERVICES.has(request.service.typeName)) return scope.run({ context: parent, ...withRequestId }, () => next(request));
    const span = tracing.tracer.startSpan(
      `${request.service.typeName}/${request.method.name}`,
      {
        kind: SpanKind.SERVER,
        attributes: { "rpc.system": "connect_rpc", "rpc.service": request.service.typeName, "rpc.method": request.method.name },
      },
      parent,
    );
    const finish = (code: Code | undefined) => {
      span.setAttribute("rpc.connect_rpc.error_code", code === undefined ? "ok" : connectCodeName(code));
      if (code !== undefined && SERVER_FAULTS.has(code)) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    return scope.run({ context: trace.setSpan(parent, span), ...withRequestId }, async () => {
      try {
        const response = await next(request);
        finish(undefined);
        return response;
      } catch (error) {
        finish(error instanceof ConnectError ? error.code : Code.Unknown);
        throw error;
      }
    });
  };
}

/** Client side: forwards the current trace context and request id on every call. */
export function sendTraceContext(scope: TraceScope, tracing: Tracing): Interceptor {
  return (next) => (request) => {
    const current = scope.current();
    if (current) {
      for (const [name, value] of Object.entries(tracing.headers(current.context))) request.header.set(name, value);
      if (current.requestId) request.header.set(REQUEST_ID_HEADER, current.requestId);
    }
    return next(request);
  };
}
