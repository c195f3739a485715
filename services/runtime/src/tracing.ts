import { type Context, ROOT_CONTEXT, type TextMapGetter, type Tracer, trace } from "@opentelemetry/api";
import { ExportResultCode, parseKeyPairsIntoRecord, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as OtlpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OtlpProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { Logger } from "./logger.ts";

/**
 * Tracing through the OpenTelemetry SDK: one TracerProvider per process, made in main.ts (through
 * tracingFromEnv) and handed down as a Tracing. Nothing is registered globally: spans start from the
 * contexts our code passes explicitly (TraceScope keeps the current request's), and W3C trace context
 * is read and written by one W3CTraceContextPropagator instance per process, not the API's global one.
 *
 * Spans are made whether or not they are exported (they carry the trace and span ids that go downstream
 * and into log lines), except where nothing reads their ids: those check `exporting`. They are exported
 * only when OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) is set. Export
 * failures are logged and the spans dropped: tracing must never slow or fail a request.
 */

/** Reads one header of a request or message ("traceparent", "tracestate"). */
export interface HeaderLookup {
  get(name: string): string | null | undefined;
}

export interface Tracing {
  readonly tracer: Tracer;
  /** Whether finished spans go anywhere (a processor is configured). A span whose ids go nowhere need not be made without it. */
  readonly exporting: boolean;
  /** The remote parent a carrier's traceparent (and tracestate) names; ROOT_CONTEXT when absent or invalid. */
  extract(carrier: HeaderLookup): Context;
  /** The W3C headers (traceparent, and tracestate when there is one) that make the next hop a child of the span in `context`. */
  headers(context: Context): Record<string, string>;
  /** Exports what is queued and stops; the last shutdown step. */
  shutdown(): Promise<void>;
}

const lookupGetter: TextMapGetter<HeaderLookup> = {
  keys: () => ["traceparent", "tracestate"],
  get: (carrier, key) => carrier.get(key) ?? undefined,
};

export interface TracingOptions {
  /** service.name of every span (OTEL_SERVICE_NAME overrides it in tracingFromEnv). */
  serviceName: string;
  sampler: Sampler;
  /** Where finished spans go; none when export is off. */
  spanProcessors: SpanProcessor[];
}

export function createTracing(options: TracingOptions): Tracing {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName, "service.namespace": "subdata" }),
    sampler: options.sampler,
    spanProcessors: options.spanProcessors,
  });
  const propagator = new W3CTraceContextPropagator();
  return {
    tracer: provider.getTracer("@subdata/runtime"),
    exporting: options.spanProcessors.length > 0,
    extract: (carrier) => propagator.extract(ROOT_CONTEXT, carrier, lookupGetter),
    headers(context) {
      const carrier: Record<string, string> = {};
      propagator.inject(context, carrier, {
        set(target, key, value) {
          target[key] = value;
        },
      });
      return carrier;
    },
    // A failed last export is already logged (loggingExporter); it must not fail the shutdown.
    shutdown: () => provider.shutdown().catch(() => {}),
  };
}

/** The ids log lines carry for the span in `context`; empty outside any span. */
export function spanIds(context: Context): { traceId?: string; spanId?: string } {
  const span = trace.getSpanContext(context);
  return span ? { traceId: span.traceId, spanId: span.spanId } : {};
}

const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;

/**
 * The sampler OTEL_TRACES_SAMPLER (and OTEL_TRACES_SAMPLER_ARG, a ratio) name, as the OpenTelemetry
 * specification defines them. The default, parentbased_always_on, follows the caller's sampled flag
 * and records every trace that starts here. An unknown name or ratio throws, naming the variable.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || "parentbased_always_on";
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    throw new Error(`OTEL_TRACES_SAMPLER=${name} is not supported: use one of ${SAMPLERS.join(", ")}`);
  }
  const arg = env.OTEL_TRACES_SAMPLER_ARG;
  const ratio = () => {
    const text = arg?.trim();
    if (!text) return 1;
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0 || value > 1) throw new Error(`OTEL_TRACES_SAMPLER_ARG=${text} must be a ratio between 0 and 1`);
    return value;
  };
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio());
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Failed exports are logged (never their headers, which may hold an API key) and dropped. */
function loggingExporter(exporter: SpanExporter, logger: Logger): SpanExporter {
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) logger.warn({ err: result.error, spans: spans.length }, "OTLP export failed; spans dropped");
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * The exporter the standard OTEL_* variables ask for, or undefined when export is off (the default).
 * Throws on a malformed endpoint or an unsupported protocol, so a misconfiguration fails start-up
 * instead of silently exporting nothing. The exporter itself reads the other OTEL_EXPORTER_OTLP_*
 * variables (headers, timeout, compression, certificates) from the process environment.
 */
export function spanExporterFromEnv(env: NodeJS.ProcessEnv, logger: Logger): SpanExporter | undefined {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const explicit = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!base && !explicit) return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/json";
  if (protocol !== "http/json" && protocol !== "http/protobuf") {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: subdata exports OTLP over HTTP (http/json or http/protobuf)`);
  }
  const url = new URL(explicit ?? `${base!.replace(/\/+$/, "")}/v1/traces`);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL");
  logger.info({ otlpTracesUrl: `${url.origin}${url.pathname}`, protocol }, "exporting traces over OTLP/HTTP");
  // "k1=v1,k2=v2", values URL-encoded: e.g. a backend's API key (never logged).
  const headers = parseKeyPairsIntoRecord(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS);
  const config = { url: url.toString(), headers };
  return protocol === "http/json" ? new OtlpJsonExporter(config) : new OtlpProtobufExporter(config);
}

/**
 * A process's Tracing as the standard OTEL_* variables configure it: OTEL_SERVICE_NAME (default
 * `serviceName`), OTEL_TRACES_SAMPLER(_ARG), and export as spanExporterFromEnv reads it. Spans are
 * batched: up to 512 per request, every 5 s, at most 8,192 waiting (beyond that new spans are dropped).
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv, serviceName: string, logger: Logger): Tracing {
  const sampler = samplerFromEnv(env);
  const exporter = spanExporterFromEnv(env, logger);
  const spanProcessors = exporter
    ? [new BatchSpanProcessor({ exporter: loggingExporter(exporter, logger), maxExportBatchSize: 512, scheduledDelayMillis: 5_000, maxQueueSize: 8_192 })]
    : [];
  return createTracing({ serviceName: env.OTEL_SERVICE_NAME || serviceName, sampler, spanProcessors });
}
