import { formatTraceparent, newSpanId, parseTraceparent, startTrace, type TraceContext } from "@subdata/runtime";

/**
 * Trace context across the gap between ingest and delivery. A delivery is a stored row sent later by
 * whichever worker claims it, so the relay's traceparent (a JetStream message header) is stored with the
 * event (webhook_events.traceparent), and each attempt continues that trace with a span of its own: the
 * receiver and our attempt log line then share the relay's trace id. Retries, resends and replays of a
 * stored event stay in its trace; an event without one (a test event, a message published without the
 * header) gets a new trace per attempt.
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
