import { createClient } from "@connectrpc/connect";
import { Health } from "@subdata/proto/grpc/health/v1/health_pb";
import { afterEach, describe, expect, it } from "vitest";
import { createConnectServer } from "./connect-server.ts";
import { createHealthState } from "./health.ts";
import { createMetrics, registerPoolMetrics, rpcClientMetrics, startMetricsServer } from "./metrics.ts";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { createCapturedSpans } from "./test-support/captured-spans.ts";
import { createTraceScope, sendTraceContext } from "./trace-context.ts";
import { createServiceTransport } from "./transport.ts";
import { createCapturedLogger } from "./test-support/captured-logger.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("metrics", () => {
  it("counts and times RPCs by method and code, and carries the caller's trace into the service's logs", async () => {
    const registry = createMetrics({ service: "test" });
    const serverTrace = createTraceScope();
    const { logger, lines } = createCapturedLogger({ name: "test", level: "debug", context: serverTrace.logFields });
    const server = createConnectServer({
      routes: () => {},
      serviceNames: ["subdata.test.v1.Nothing"],
      callers: {},
      logger,
      health: createHealthState(),
      observability: { metrics: registry, trace: serverTrace, tracing: createCapturedSpans().tracing },
    });
    const address = await server.listen("127.0.0.1", 0);
    cleanups.push(() => server.close());
    const clientTrace = createTraceScope();
    const clientTracing = createCapturedSpans().tracing;
    const clientRegistry = createMetrics({ service: "caller", defaultMetrics: false });
    const transport = createServiceTransport({
      baseUrl: `http://127.0.0.1:${address.port}`,
      serviceToken: "health-needs-no-credential",
      interceptors: [rpcClientMetrics(clientRegistry), sendTraceContext(clientTrace, clientTracing)],
    });
    cleanups.push(() => transport.close());
    const health = createClient(Health, transport.transport);

    const callerSpan = clientTracing.tracer.startSpan("caller", {}, ROOT_CONTEXT).spanContext();
    const caller = { traceId: callerSpan.traceId, spanId: callerSpan.spanId };
    await clientTrace.run({ context: trace.setSpanContext(ROOT_CONTEXT, callerSpan), requestId: "req_0123456789" }, () => health.check({ service: "" }));
    await expect(health.check({ service: "unknown" })).rejects.toThrow();

    const text = await registry.metrics();
    expect(text).toContain('subdata_rpc_server_requests_total{rpc_service="grpc.health.v1.Health",rpc_method="Check",code="ok",component="test"} 1');
    expect(text).toContain('subdata_rpc_server_requests_total{rpc_service="grpc.health.v1.Health",rpc_method="Check",code="not_found",component="test"} 1');
    const histogram = await registry.getSingleMetric("subdata_rpc_server_duration_seconds")!.get();
    const count = histogram.values.find((value) => (value as { metricName?: string }).metricName === "subdata_rpc_server_duration_seconds_count");
    expect(count).toMatchObject({ value: 2, labels: { rpc_service: "grpc.health.v1.Health", rpc_method: "Check" } });
    // The caller's side of the same two calls.
    const clientText = await clientRegistry.metrics();
    expect(clientText).toContain('subdata_rpc_client_requests_total{rpc_service="grpc.health.v1.Health",rpc_method="Check",code="ok",component="caller"} 1');
    expect(clientText).toContain(
      'subdata_rpc_client_requests_total{rpc_service="grpc.health.v1.Health",rpc_method="Check",code="not_found",component="caller"} 1',
    );
    expect(clientText).toContain('subdata_rpc_client_duration_seconds_count{component="caller",rpc_service="grpc.health.v1.Health",rpc_method="Check"} 2');
    // Default process metrics are in the same registry.
    expect(text).toContain("nodejs_eventloop_lag_seconds");
    expect(text).toContain("process_resident_memory_bytes");

    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "rpc ok");
    expect(logged).toMatchObject({ traceId: caller.traceId, requestId: "req_0123456789" });
    // Health checks make no span of their own: the line names the caller's.
    expect(logged?.spanId).toBe(caller.spanId);
  });

  it("serves /metrics over HTTP/1.1 on its own port, with pool gauges read at scrape time", async () => {
    const registry = createMetrics({ service: "test", defaultMetrics: false });
    const pool = { totalCount: 3, idleCount: 1, waitingCount: 2, options: { max: 4 } };
    registerPoolMetrics(registry, pool);
    const server = await startMetricsServer(registry, "127.0.0.1", 0);
    cleanups.push(() => server.close());
    const response = await fetch(`http://127.0.0.1:${server.address.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    const text = await response.text();
    expect(text).toContain('subdata_db_pool_connections{pool="main",state="waiting",component="test"} 2');
    expect(text).toContain('subdata_db_pool_max{pool="main",component="test"} 4');
    expect((await fetch(`http://127.0.0.1:${server.address.port}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${server.address.port}/other`)).status).toBe(404);
  });
});
