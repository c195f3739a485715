import type { Logger } from "./logger.ts";

/**
 * Optional OTLP trace export without the OpenTelemetry SDK: finished spans are batched and POSTed as
 * OTLP/HTTP JSON (https://opentelemetry.io/docs/specs/otlp/#otlphttp) to a collector. Only the span
 * tree our own W3C propagation already knows is exported: one SERVER span per gateway request and per
 * RPC handled, one PRODUCER span per relay publish, one CLIENT span per webhook attempt. Nothing is set up, and nothing changes, unless OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Export failures are logged and dropped: tracing must
 * never slow or fail a request.
 */

export type SpanKind = "internal" | "server" | "client" | "producer" | "consumer";

export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId?: string | undefined;
  name: string;
  kind: SpanKind;
  /** Epoch milliseconds (fractions allowed). */
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  error?: boolean;
  /**
   * False when the trace's flags say "not sampled" (trace-context.ts isSampled): the span is dropped,
   * as a parent-based sampler would, so a caller's or an edge's head sampling holds across our hops.
   * Spans of traces we start are always sampled.
   */
  sampled?: boolean;
}

/** Epoch milliseconds with sub-millisecond precision: the clock every span's start and end are read from. */
export function spanClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export interface SpanExporter {
  export(span: SpanRecord): void;
  /** Sends what is queued; call last on shutdown. */
  shutdown(): Promise<void>;
}

export interface OtlpExporterOptions {
  /** Full URL of the traces endpoint, e.g. http://otel-collector:4318/v1/traces. */
  url: string;
  serviceName: string;
  /** Extra request headers (OTEL_EXPORTER_OTLP_HEADERS), e.g. an API key: never logged. */
  headers?: Record<string, string>;
  logger: Logger;
  maxBatch?: number;
  intervalMs?: number;
  /** At most this many spans wait; beyond it new spans are dropped (and counted in a log line). */
  maxQueue?: number;
  fetch?: typeof fetch;
}

const KINDS: Record<SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };

function nanos(ms: number): string {
  return (BigInt(Math.floor(ms)) * 1_000_000n + BigInt(Math.round((ms % 1) * 1_000_000))).toString();
}

function attributeValue(value: string | number | boolean) {
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { stringValue: value };
}

const attributes = (record: Record<string, string | number | boolean>) => Object.entries(record).map(([key, value]) => ({ key, value: attributeValue(value) }));

/** The OTLP/HTTP JSON body for a batch of spans of one service. Ids stay hex, as the JSON mapping says. */
export function otlpTraceRequest(serviceName: string, spans: readonly SpanRecord[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributes({ "service.name": serviceName, "service.namespace": "subdata" }) },
        scopeSpans: [
          {
            scope: { name: "@subdata/runtime" },
            spans: spans.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              kind: KINDS[span.kind],
              startTimeUnixNano: nanos(span.startMs),
              endTimeUnixNano: nanos(span.endMs),
              attributes: attributes(span.attributes),
              status: span.error ? { code: 2 } : { code: 0 },
            })),
          },
        ],
      },
    ],
  };
}

export function createOtlpSpanExporter(options: OtlpExporterOptions): SpanExporter {
  const send = options.fetch ?? fetch;
  const maxBatch = options.maxBatch ?? 512;
  const maxQueue = options.maxQueue ?? 8_192;
  let queue: SpanRecord[] = [];
  let dropped = 0;
  let sending: Promise<void> = Promise.resolve();

  async function post(batch: SpanRecord[]): Promise<void> {
    try {
      const response = await send(options.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...options.headers },
        body: JSON.stringify(otlpTraceRequest(options.serviceName, batch)),
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      if (!response.ok) options.logger.warn({ status: response.status, spans: batch.length }, "OTLP export refused; spans dropped");
    } catch (error) {
      options.logger.warn({ err: error, spans: batch.length }, "OTLP export failed; spans dropped");
    }
  }

  function flush(): Promise<void> {
    if (dropped > 0) {
      options.logger.warn({ dropped }, "OTLP export queue full; spans dropped");
      dropped = 0;
    }
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      // One request at a time, in order.
      sending = sending.then(() => post(batch));
    }
    return sending;
  }

  const timer = setInterval(() => void flush(), options.intervalMs ?? 5_000);
  timer.unref();
  return {
    export(span) {
      if (span.sampled === false) return;
      if (queue.length >= maxQueue) {
        dropped++;
        return;
      }
      queue.push(span);
      if (queue.length >= maxBatch) void flush();
    },
    async shutdown() {
      clearInterval(timer);
      await flush();
      queue = [];
    },
  };
}

/** "k1=v1,k2=v2" (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS is specified. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/**
 * The exporter the standard OTEL_* variables ask for, or undefined when tracing export is off (the
 * default). Throws on a malformed endpoint or an unsupported protocol, so a misconfiguration fails
 * start-up instead of silently exporting nothing.
 */
export function spanExporterFromEnv(env: NodeJS.ProcessEnv, serviceName: string, logger: Logger): SpanExporter | undefined {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const explicit = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!base && !explicit) return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/json";
  if (protocol !== "http/json") {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: subdata exports OTLP over HTTP as JSON only (http/json)`);
  }
  const url = new URL(explicit ?? `${base!.replace(/\/+$/, "")}/v1/traces`);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL");
  const headers = parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS);
  logger.info({ otlpTracesUrl: `${url.origin}${url.pathname}` }, "exporting traces over OTLP/HTTP (JSON)");
  return createOtlpSpanExporter({ url: url.toString(), serviceName: env.OTEL_SERVICE_NAME ?? serviceName, headers, logger });
}
