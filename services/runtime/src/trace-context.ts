import { AsyncLocalStorage } from "node:async_hooks";
import { randomFillSync } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { connectCodeName } from "./errors.ts";
import { type SpanExporter, spanClockMs } from "./span-exporter.ts";

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) without an SDK: the gateway accepts or
 * starts a `traceparent`, every hop forwards it (with a new parent id) together with `tracestate` and
 * our `request-id`, and every log line written while serving a request carries `traceId` and
 * `requestId`. OTLP export is separate and optional (see docs/observability.md).
 */

export interface TraceContext {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits: the span this process is working in. */
  spanId: string;
  /** The caller's span, when the trace came in from a caller. */
  parentSpanId?: string;
  /** "01" sampled, "00" not. */
  flags: string;
  tracestate?: string;
  /** The gateway's Request-Id (req_…), when the work started at the gateway. */
  requestId?: string;
}

const TRACEPARENT_HEADER = "traceparent";
const TRACESTATE_HEADER = "tracestate";
const REQUEST_ID_HEADER = "request-id";

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Parses a traceparent header; undefined when absent or invalid (the caller then starts a trace). */
export function parseTraceparent(value: string | undefined | null): Pick<TraceContext, "traceId" | "spanId" | "flags"> | undefined {
  if (!value) return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  // Version ff is invalid; version 00 has no trailing fields; later versions may (we read the known part).
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags };
}

export function formatTraceparent(context: Pick<TraceContext, "traceId" | "spanId" | "flags">): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`;
}

/**
 * Random bytes for ids, drawn from a buffer filled 4 KB at a time (as Node's own randomUUID does):
 * a randomBytes call per id cost 3–4 % of the gateway's CPU. The bytes are still CSPRNG output, each
 * used once. Shared by the process because it holds nothing but entropy.
 */
const ENTROPY_POOL_BYTES = 4096;
const entropy = Buffer.alloc(ENTROPY_POOL_BYTES);
let entropyOffset = ENTROPY_POOL_BYTES;

function randomHex(bytes: number): string {
  if (entropyOffset + bytes > ENTROPY_POOL_BYTES) {
    randomFillSync(entropy);
    entropyOffset = 0;
  }
  const hex = entropy.toString("hex", entropyOffset, entropyOffset + bytes);
  entropyOffset += bytes;
  return hex;
}

/** A span id: 16 hex digits, never all zero (W3C: an all-zero id is invalid). */
export function newSpanId(): string {
  const id = randomHex(8);
  return id === "0000000000000000" ? newSpanId() : id;
}

/**
 * W3C trace-flags' "sampled" bit: the caller (or whoever started the trace) wants its spans recorded.
 * Flags that are not two hex digits (parseTraceparent never yields them) count as sampled.
 */
export function isSampled(flags: string): boolean {
  return !/^[0-9a-f]{2}$/i.test(flags) || (Number.parseInt(flags, 16) & 1) === 1;
}

/** A new trace (sampled): for work that starts here, like a relayed event or a request without traceparent. */
export function startTrace(): TraceContext {
  let traceId = randomHex(16);
  while (traceId === "00000000000000000000000000000000") traceId = randomHex(16);
  return { traceId, spanId: newSpanId(), flags: "01" };
}

/**
 * The context of work caused by incoming `headers`: the caller's trace with a fresh span of our own,
 * or a new trace. A request id is kept only when it looks like one (it ends up in logs).
 */
export function continueTrace(headers: { get(name: string): string | null | undefined }): TraceContext {
  const parent = parseTraceparent(headers.get(TRACEPARENT_HEADER));
  const context: TraceContext = parent ? { ...parent, spanId: newSpanId(), parentSpanId: parent.spanId } : startTrace();
  const tracestate = headers.get(TRACESTATE_HEADER);
  if (parent && tracestate) context.tracestate = tracestate.slice(0, 512);
  const requestId = headers.get(REQUEST_ID_HEADER);
  if (requestId && REQUEST_ID.test(requestId)) context.requestId = requestId;
  return context;
}

/** The headers that carry `context` to the next hop, which appears as a child of our span. */
export function traceHeaders(context: TraceContext): Record<string, string> {
  return {
    [TRACEPARENT_HEADER]: formatTraceparent(context),
    ...(context.tracestate ? { [TRACESTATE_HEADER]: context.tracestate } : {}),
    ...(context.requestId ? { [REQUEST_ID_HEADER]: context.requestId } : {}),
  };
}

/**
 * Where the current request's trace context lives while it is served. One per process, made in
 * main.ts and handed to the logger (logFields), the server (run) and the clients (current).
 */
export interface TraceScope {
  run<T>(context: TraceContext, fn: () => T): T;
  current(): TraceContext | undefined;
  /** For pino's mixin: the fields every log line inside a request gets. */
  logFields(): { traceId?: string; spanId?: string; requestId?: string };
}

export function createTraceScope(): TraceScope {
  const storage = new AsyncLocalStorage<TraceContext>();
  return {
    run: (context, fn) => storage.run(context, fn),
    current: () => storage.getStore(),
    logFields() {
      const context = storage.getStore();
      if (!context) return {};
      return { traceId: context.traceId, spanId: context.spanId, ...(context.requestId ? { requestId: context.requestId } : {}) };
    },
  };
}

/** Probes are frequent and say nothing about a request: no spans for them. */
const UNTRACED_SERVICES = new Set(["grpc.health.v1.Health"]);

/**
 * Server side: every RPC runs inside the caller's trace (or a new one); with `spans`, each RPC is
 * also exported as a SERVER span.
 */
export function acceptTraceContext(scope: TraceScope, spans?: SpanExporter): Interceptor {
  return (next) => (request) => {
    const context = continueTrace(request.header);
    if (!spans || UNTRACED_SERVICES.has(request.service.typeName)) return scope.run(context, () => next(request));
    const startMs = spanClockMs();
    const finish = (code: string) =>
      spans.export({
        traceId: context.traceId,
        spanId: context.spanId,
        parentSpanId: context.parentSpanId,
        name: `${request.service.typeName}/${request.method.name}`,
        kind: "server",
        startMs,
        endMs: spanClockMs(),
        attributes: {
          "rpc.system": "connect_rpc",
          "rpc.service": request.service.typeName,
          "rpc.method": request.method.name,
          "rpc.connect_rpc.error_code": code,
        },
        error: code === "internal" || code === "unknown" || code === "unavailable" || code === "data_loss",
        sampled: isSampled(context.flags),
      });
    return scope.run(context, async () => {
      try {
        const response = await next(request);
        finish("ok");
        return response;
      } catch (error) {
        finish(connectCodeName(error instanceof ConnectError ? error.code : Code.Unknown));
        throw error;
      }
    });
  };
}

/** Client side: forwards the current trace context and request id on every call. */
export function sendTraceContext(scope: TraceScope): Interceptor {
  return (next) => (request) => {
    const context = scope.current();
    if (context) {
      for (const [name, value] of Object.entries(traceHeaders(context))) request.header.set(name, value);
    }
    return next(request);
  };
}
