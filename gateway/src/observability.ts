import { type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from "@opentelemetry/semantic-conventions";
import { Counter, type HealthState, Histogram, LATENCY_BUCKETS, type Registry, type TraceScope, type Tracing } from "@subdata/runtime";
import type { FastifyRequest } from "fastify";
import type { AuditRefusal } from "./audit-recorder.ts";
import type { Gateway } from "./server.ts";

/** Kubernetes probe paths, outside /api/v1: no key, no rate limit, no audit record. */
const LIVENESS_PATH = "/livez";
const READINESS_PATH = "/readyz";

/** The route template of a request ("/v1/subscriptions/{id}"), or "unmatched" for 404s: bounded cardinality. */
function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.config.auditRoute ?? request.routeOptions.url ?? "unmatched";
}

/**
 * GET /livez: 200 while the process runs. GET /readyz: 200 while `health` is serving; main.ts turns
 * it off first thing on SIGTERM, so load balancers stop sending before the listener closes.
 */
export function registerProbes(app: Gateway, health: HealthState): void {
  app.register(async (root) => {
    const noStore = { "cache-control": "no-store" };
    root.get(LIVENESS_PATH, async (_request, reply) => reply.headers(noStore).type("text/plain").send("ok\n"));
    root.get(READINESS_PATH, async (_request, reply) =>
      health.serving ? reply.headers(noStore).type("text/plain").send("ready\n") : reply.code(503).headers(noStore).type("text/plain").send("shutting down\n"),
    );
  });
}

/**
 * RED metrics per route: subdata_http_requests_total{method, route, status} and
 * subdata_http_request_duration_seconds{method, route} (Fastify's elapsed time, sending included).
 */
export function registerHttpMetrics(app: Gateway, registry: Registry): void {
  const requests = new Counter({
    name: "subdata_http_requests_total",
    help: "HTTP requests answered by the gateway, by method, route template and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "subdata_http_request_duration_seconds",
    help: "Time to answer an HTTP request at the gateway",
    labelNames: ["method", "route"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  app.addHook("onResponse", async (request, reply) => {
    const labels = { method: request.method, route: routeLabel(request) };
    requests.inc({ ...labels, status: String(reply.statusCode) });
    duration.observe(labels, reply.elapsedTime / 1000);
  });
}

/** What the gateway's audit step reports (see auditMetrics). */
export interface AuditObserver {
  /** A response waited this long for its audit record to be durable. */
  waited(seconds: number): void;
  /** One RecordReads call carried `size` reads. */
  flushed(outcome: { size: number; ok: boolean }): void;
  /** A response answered 503 instead of its data because its read could not be audited. */
  refused(reason: AuditRefusal): void;
}

/**
 * subdata_gateway_audit_wait_seconds (each response's wait for its audit record: the batch in flight,
 * then its own) and subdata_gateway_audit_batch_reads (reads per RecordReads call, by outcome): with
 * subdata_gateway_upstream_queue_seconds and subdata_rpc_client_duration_seconds they split an edge
 * latency into its steps. subdata_gateway_audit_refused_total counts the 503s an unrecordable read
 * caused, by reason (the queue's bounds, or the write failing).
 */
export function auditMetrics(registry: Registry): AuditObserver {
  const wait = new Histogram({
    name: "subdata_gateway_audit_wait_seconds",
    help: "Time a response waited for its audit record to be written",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const batch = new Histogram({
    name: "subdata_gateway_audit_batch_reads",
    help: "Reads per AuditService.RecordReads call, by outcome",
    labelNames: ["outcome"] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [registry],
  });
  const refusals = new Counter({
    name: "subdata_gateway_audit_refused_total",
    help: "Responses answered 503 because their read could not be audited, by reason (queue_full, deadline, failed)",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  for (const reason of ["queue_full", "deadline", "failed"]) refusals.inc({ reason }, 0);
  return {
    refused: (reason) => refusals.inc({ reason }),
    waited: (seconds) => wait.observe(seconds),
    // "ok" | "error", as the auth service's subdata_audit_batch_size.
    flushed: ({ size, ok }) => batch.observe({ outcome: ok ? "ok" : "error" }, size),
  };
}

/**
 * Runs the rest of each request inside its trace context, a SERVER span that is a child of the
 * caller's W3C traceparent (or the root of a new trace), with the gateway's Request-Id, so the log
 * lines and upstream calls of the request carry both. A callback hook, because only code called from
 * within scope.run inherits the context. The span is named after the route template and carries no
 * query string: URLs may hold a feed cursor, and a client may put anything there.
 */
export function traceRequests(app: Gateway, scope: TraceScope, tracing: Tracing): void {
  const spans = new WeakMap<FastifyRequest, Span>();
  app.addHook("onRequest", (request, _reply, done) => {
    const parent = tracing.extract({ get: (name) => headerValue(request, name) });
    const route = routeLabel(request);
    // Our own id, never a client-supplied one (it is also the audit log's request id).
    if (route === LIVENESS_PATH || route === READINESS_PATH) return scope.run({ context: parent, requestId: request.id }, done);
    const span = tracing.tracer.startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: request.method, [ATTR_HTTP_ROUTE]: route, "subdata.request_id": request.id } },
      parent,
    );
    spans.set(request, span);
    scope.run({ context: trace.setSpan(parent, span), requestId: request.id }, done);
  });
  app.addHook("onResponse", async (request, reply) => {
    const span = spans.get(request);
    if (!span) return;
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
