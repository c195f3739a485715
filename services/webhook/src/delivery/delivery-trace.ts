import { formatTraceparent, isSampled, newSpanId, parseTraceparent, type SpanRecord, startTrace, type TraceContext } from "@subdata/runtime";
import type { AttemptResult } from "./deliver-webhook.ts";

/**
 * Trace context across the gap between ingest and delivery. A delivery is a stored row sent later by
 * whichever worker claims it, so the relay's traceparent (a JetStream message header) is stored with the
 * event (webhook_events.traceparent), and each attempt continues that trace with a span of its own: the
 * receiver and our attempt log line then share the relay's trace id. Retries, resends and replays of a
 * stored event stay in its trace; an event without one (a test event, a message published without the
 * header) gets a new trace per attempt. With OTLP export on, the relay exports its publish span and
 * the worker each attempt's span (attemptSpan), so the chain relay → attempt → receiver is complete.
 */

/** What webhook_events.traceparent stores for a message's header: canonical version-00 text, or null when absent or invalid. */
export function storedTraceparent(header: string | null | undefined): string | null {
  const parsed = parseTraceparent(header);
  return parsed ? formatTraceparent(parsed) : null;
}

/** One attempt's context: a new span in the event's trace, child of the span that published it; else a new trace. */
export function attemptTrace(eventTraceparent: string | null | undefined): TraceContext {
  const parent = parseTraceparent(eventTraceparent);
  if (!parent) return startTrace();
  return { traceId: parent.traceId, spanId: newSpanId(), parentSpanId: parent.spanId, flags: parent.flags };
}

/** What an attempt span says about the delivery it belongs to. */
export interface AttemptSpanDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  attemptNumber: number;
  url: string;
}

/**
 * One attempt as an OTLP CLIENT span (OTel HTTP client conventions), under exactly the ids its
 * traceparent header sent, so a receiver's server span has an exported parent; that parent is the
 * relay's PRODUCER span when the event was stored with a traceparent. Only the URL's origin is kept:
 * receivers put their own secrets in the path (Slack, Discord, Teams incoming webhooks) or the query;
 * subdata.endpoint_id says which endpoint it was. Timed like the attempt log line (startedAt, latency).
 */
export function attemptSpan(
  delivery: AttemptSpanDelivery,
  trace: TraceContext,
  attempt: Pick<AttemptResult, "status" | "errorClass" | "startedAt" | "latencyMicros">,
): SpanRecord {
  const startMs = attempt.startedAt.getTime();
  // The sender reports an unparsable URL as a failed attempt; the span must not throw over it.
  const url = URL.canParse(delivery.url) ? new URL(delivery.url) : undefined;
  const failed = attempt.errorClass !== "NONE";
  return {
    traceId: trace.traceId,
    spanId: trace.spanId,
    parentSpanId: trace.parentSpanId,
    name: "POST",
    kind: "client",
    startMs,
    endMs: startMs + Number(attempt.latencyMicros) / 1000,
    attributes: {
      "http.request.method": "POST",
      ...(url
        ? {
            "url.scheme": url.protocol.slice(0, -1),
            "server.address": url.hostname.replace(/^\[(.*)\]$/, "$1"),
            "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)),
          }
        : {}),
      ...(attempt.status === null ? {} : { "http.response.status_code": attempt.status }),
      ...(failed ? { "error.type": attempt.status === null ? attempt.errorClass : String(attempt.status) } : {}),
      "subdata.delivery_id": delivery.id,
      "subdata.endpoint_id": delivery.endpointId,
      "subdata.event_id": delivery.eventId,
      "subdata.attempt": delivery.attemptNumber,
      "subdata.error_class": attempt.errorClass,
    },
    error: failed,
    sampled: isSampled(trace.flags),
  };
}
