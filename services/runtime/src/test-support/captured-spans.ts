import type { SpanExporter, SpanRecord } from "../span-exporter.ts";

/** For tests: a span exporter that keeps every exported span in `spans`, in export order. */
export function createCapturedSpans(): { exporter: SpanExporter; spans: SpanRecord[] } {
  const spans: SpanRecord[] = [];
  return { spans, exporter: { export: (span) => void spans.push(span), shutdown: async () => {} } };
}
