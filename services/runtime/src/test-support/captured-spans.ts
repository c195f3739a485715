import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { ExportResultCode, hrTimeToMilliseconds } from "@opentelemetry/core";
import { AlwaysOnSampler, ParentBasedSampler, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace";
import { createTracing, type Tracing } from "../tracing.ts";

/** A finished span as tests look at it. */
export interface CapturedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: "internal" | "server" | "client" | "producer" | "consumer";
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  error: boolean;
  service: unknown;
}

const KINDS = {
  [SpanKind.INTERNAL]: "internal",
  [SpanKind.SERVER]: "server",
  [SpanKind.CLIENT]: "client",
  [SpanKind.PRODUCER]: "producer",
  [SpanKind.CONSUMER]: "consumer",
} as const;

function captured(span: ReadableSpan): CapturedSpan {
  return {
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    name: span.name,
    kind: KINDS[span.kind],
    startMs: hrTimeToMilliseconds(span.startTime),
    endMs: hrTimeToMilliseconds(span.endTime),
    attributes: { ...span.attributes },
    error: span.status.code === SpanStatusCode.ERROR,
    service: span.resource.attributes["service.name"],
  };
}

/**
 * For tests: a Tracing through the SDK (the default parent-based sampler) whose finished, sampled
 * spans land in `spans`, in the order they ended.
 */
export function createCapturedSpans(serviceName = "subdata-test"): { tracing: Tracing; spans: CapturedSpan[] } {
  const spans: CapturedSpan[] = [];
  const tracing = createTracing({
    serviceName,
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [
      new SimpleSpanProcessor({
        exporter: {
          export(finished, done) {
            spans.push(...finished.map(captured));
            done({ code: ExportResultCode.SUCCESS });
          },
          shutdown: async () => {},
        },
      }),
    ],
  });
  return { tracing, spans };
}
