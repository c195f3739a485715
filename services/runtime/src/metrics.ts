import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { connectCodeName } from "./errors.ts";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

export { Counter, Gauge, Histogram, Registry };

/**
 * Prometheus metrics with prom-client. Every process makes its own Registry (never prom-client's
 * global one, so tests can run several services in one process) with the default process metrics
 * (CPU, RSS, heap, GC, event-loop lag) and a constant `component` label ("gateway", "query", …), then
 * registers its own. Not "service": Prometheus Operator sets a `service` target label (the Kubernetes
 * Service), which would rename ours to exported_service.
 */
export function createMetrics(options: { service: string; defaultMetrics?: boolean }): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ component: options.service });
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  return registry;
}

/** Latency buckets in seconds, from a cached lookup (~1 ms) to a timed-out upstream call (5 s+). */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * RED metrics of a Connect server, one series per RPC and code:
 * subdata_rpc_server_requests_total{rpc_service, rpc_method, code} and
 * subdata_rpc_server_duration_seconds{rpc_service, rpc_method}. Streaming RPCs are timed until the
 * handler returned its stream.
 */
export function rpcServerMetrics(registry: Registry): Interceptor {
  return rpcMetrics(
    registry,
    { name: "subdata_rpc_server_requests_total", help: "RPCs handled, by service, method and Connect code" },
    { name: "subdata_rpc_server_duration_seconds", help: "RPC handling time" },
  );
}

/**
 * The same metrics seen from a Connect client, subdata_rpc_client_requests_total and
 * subdata_rpc_client_duration_seconds: from the call leaving this interceptor to its answer (time spent
 * queued in interceptors before it is not counted).
 */
export function rpcClientMetrics(registry: Registry): Interceptor {
  return rpcMetrics(
    registry,
    { name: "subdata_rpc_client_requests_total", help: "RPCs called, by service, method and Connect code" },
    { name: "subdata_rpc_client_duration_seconds", help: "RPC time seen by the caller, until the response message arrived" },
  );
}

/** Names spelled out in full at each call: deploy/observability's test finds registered metrics by them. */
function rpcMetrics(registry: Registry, counter: { name: string; help: string }, histogram: { name: string; help: string }): Interceptor {
  const requests = new Counter({
    ...counter,
    labelNames: ["rpc_service", "rpc_method", "code"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    ...histogram,
    labelNames: ["rpc_service", "rpc_method"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  return (next) => async (request) => {
    const labels = { rpc_service: request.service.typeName, rpc_method: request.method.name };
    const stop = duration.startTimer(labels);
    let code = "ok";
    try {
      return await next(request);
    } catch (error) {
      code = connectCodeName(error instanceof ConnectError ? error.code : Code.Unknown);
      throw error;
    } finally {
      stop();
      requests.inc({ ...labels, code });
    }
  };
}

/** What registerPoolMetrics reads from a pg.Pool. */
export interface PoolStats {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly options?: { max?: number };
}

/**
 * Gauges of a pg pool, read at scrape time: subdata_db_pool_connections{pool, state=total|idle|waiting}
 * and subdata_db_pool_max{pool}. waiting > 0 for long means the pool is saturated.
 */
export function registerPoolMetrics(registry: Registry, pool: PoolStats, name = "main"): void {
  new Gauge({
    name: "subdata_db_pool_connections",
    help: "Connections of a pg pool: total, idle, and clients waiting for one",
    labelNames: ["pool", "state"] as const,
    registers: [registry],
    collect() {
      this.set({ pool: name, state: "total" }, pool.totalCount);
      this.set({ pool: name, state: "idle" }, pool.idleCount);
      this.set({ pool: name, state: "waiting" }, pool.waitingCount);
    },
  });
  new Gauge({
    name: "subdata_db_pool_max",
    help: "The pool's maximum size (DATABASE_POOL_MAX)",
    labelNames: ["pool"] as const,
    registers: [registry],
    collect() {
      this.set({ pool: name }, pool.options?.max ?? 0);
    },
  });
}

export interface MetricsServer {
  readonly address: AddressInfo;
  close(): Promise<void>;
}

/**
 * A plain HTTP/1.1 server for Prometheus on its own port (the Connect servers speak h2c only, and the
 * gateway's public port should not expose internals): GET /metrics, and GET /healthz for liveness.
 */
export async function startMetricsServer(registry: Registry, host: string, port: number): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const handle = async () => {
      const path = (request.url ?? "/").split("?")[0];
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.writeHead(405, { allow: "GET, HEAD" }).end();
      } else if (path === "/metrics") {
        const body = await registry.metrics();
        response.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" }).end(body);
      } else if (path === "/healthz") {
        response.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      } else {
        response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      }
    };
    handle().catch(() => {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  // Scrapes are short; do not let an idle keep-alive connection hold shutdown up.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
