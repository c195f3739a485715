import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { parseTraceParent } from "@opentelemetry/core";
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_SCHEME,
} from "@opentelemetry/semantic-conventions";
import type { Tracing } from "@subdata/runtime";
import type { AttemptResult } from "./deliver-webhook.ts";

/**
 * Trace context across the gap between ingest and delivery. A delivery is a stored row sent later by
 * whichever worker claims it, so the relay's traceparent (a JetStream message header) is stored with the
 * event (webhook_events.traceparent), and each attempt continues that trace with a span of its own: the
 * receiver and our attempt log line then share the relay's trace id. Retries, resends and replays of a
 * stored event stay in its trace; an event without one (a test event, a message published without the
 * header) gets a new trace per attempt. The relay's publish span is the parent of every attempt's
 * span, so the chain relay → attempt → receiver is complete.
 */

/** What webhook_events.traceparent stores for a message's header: canonical version-00 text, or null when absent or invalid. */
export function storedTraceparent(header: string | null | undefined): string | null {
  const parsed = header ? parseTraceParent(header) : null;
  return parsed ? `00-${parsed.traceId}-${parsed.spanId}-${parsed.traceFlags.toString(16).padStart(2, "0")}` : null;
}

/** What an attempt span says about the delivery it belongs to. */
export interface AttemptSpanDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  attemptNumber: number;
  url: string;
  /** The event's stored traceparent (the relay's publish span), or null: the attempt then starts a trace. */
  traceparent: string | null;
}

/** An attempt's span, and the traceparent the POST sends so the receiver's span is its child. */
export interface AttemptTrace {
  span: Span;
  traceparent: string;
}

/**
 * One attempt as a CLIENT span (OTel HTTP client conventions), a child of the relay's publish span
 * when the event was stored with a traceparent. Only the URL's origin is kept: receivers put their own
 * secrets in the path (Slack, Discord, Teams incoming webhooks) or the query; subdata.endpoint_id says
 * which endpoint it was. The sampling decision is the relay's (parent-based).
 */
export function startAttemptSpan(tracing: Tracing, delivery: AttemptSpanDelivery): AttemptTrace {
  const parent = tracing.extract({ get: (name) => (name === "traceparent" ? delivery.traceparent : undefined) });
  // The sender reports an unparsable URL as a failed attempt; the span must not throw over it.
  const url = URL.canParse(delivery.url) ? new URL(delivery.url) : undefined;
  const span = tracing.tracer.startSpan(
    "POST",
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: "POST",
        ...(url
          ? {
              [ATTR_URL_SCHEME]: url.protocol.slice(0, -1),
              [ATTR_SERVER_ADDRESS]: url.hostname.replace(/^\[(.*)\]$/, "$1"),
              [ATTR_SERVER_PORT]: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
            }
          : {}),
        "subdata.delivery_id": delivery.id,
        "subdata.endpoint_id": delivery.endpointId,
        "subdata.event_id": delivery.eventId,
        "subdata.attempt": delivery.attemptNumber,
      },
    },
    parent,
  );
  // Receivers get traceparent only, never tracestate.
  return { span, traceparent: tracing.headers(trace.setSpan(ROOT_CONTEXT, span)).traceparent! };
}

/** Ends an attempt's span with what the attempt came to: the status, or the error class when nothing answered. */
export function endAttemptSpan(span: Span, attempt: Pick<AttemptResult, "status" | "errorClass">): void {
  const failed = attempt.errorClass !== "NONE";
  if (attempt.status !== null) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, attempt.status);
  span.setAttribute("subdata.error_class", attempt.errorClass);
  if (failed) {
    span.setAttribute(ATTR_ERROR_TYPE, attempt.status === null ? attempt.errorClass : String(attempt.status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
