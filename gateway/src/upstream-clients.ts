import { createClient, type Interceptor } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { createServiceTransport, Histogram, LATENCY_BUCKETS, type Registry, rpcClientMetrics } from "@subdata/runtime";
import type { GatewayClients } from "./server.ts";
import { limitConcurrency } from "./upstream-limit.ts";

/**
 * Query calls in flight at once (the rest queue in the gateway). The query service reads through a
 * pool of 4 connections; a few more keep it busy while pages travel and are rendered.
 */
const DEFAULT_QUERY_CONCURRENCY = 16;

/**
 * The upstream clients over three reused HTTP/2 sessions: query (slot-limited), query for feed reads
 * that may wait (bounded by the gateway's waiting-reads limit instead: a 30 s wait must not hold one
 * of the few slots the lists share), and auth + audit.
 */
export interface UpstreamClients {
  clients: GatewayClients;
  /** Closes both sessions. */
  close(): void;
}

export function createUpstreamClients(options: {
  queryUrl: string;
  authUrl: string;
  serviceToken: string;
  /** e.g. sendTraceContext(scope): traceparent and request-id on every upstream call. */
  interceptors?: Interceptor[];
  /** Bound on concurrent query calls (upstream-limit.ts); DEFAULT_QUERY_CONCURRENCY when omitted. */
  queryConcurrency?: number;
  /** Query calls waiting for a slot at most (SUBDATA_QUERY_QUEUE_MAX); beyond, RESOURCE_EXHAUSTED (503). Unbounded when omitted. */
  queryQueueMax?: number;
  /**
   * When given: subdata_rpc_client_* per RPC (the call alone) and subdata_gateway_upstream_queue_seconds
   * (the wait for a query slot), so an edge latency splits into queueing, the call, and the rest.
   */
  metrics?: Registry;
}): UpstreamClients {
  const measured = options.metrics ? [rpcClientMetrics(options.metrics)] : [];
  const transport = (baseUrl: string, first: Interceptor[] = []) =>
    createServiceTransport({ baseUrl, serviceToken: options.serviceToken, interceptors: [...first, ...measured, ...(options.interceptors ?? [])] });
  const queueWait = options.metrics
    ? new Histogram({
        name: "subdata_gateway_upstream_queue_seconds",
        help: "Time an upstream call waited for one of the gateway's slots for that upstream",
        labelNames: ["upstream"] as const,
        buckets: [0, ...LATENCY_BUCKETS],
        registers: [options.metrics],
      })
    : undefined;
  const query = transport(options.queryUrl, [
    limitConcurrency(
      options.queryConcurrency ?? DEFAULT_QUERY_CONCURRENCY,
      queueWait && ((seconds) => queueWait.observe({ upstream: "query" }, seconds)),
      options.queryQueueMax,
    ),
  ]);
  const waitingQuery = transport(options.queryUrl);
  const auth = transport(options.authUrl);
  return {
    clients: {
      subscriptions: createClient(SubscriptionService, query.transport),
      orders: createClient(OrderService, query.transport),
      events: createClient(EventService, query.transport),
      waitingEvents: createClient(EventService, waitingQuery.transport),
      apiKeys: createClient(ApiKeyService, auth.transport),
      audit: createClient(AuditService, auth.transport),
    },
    close() {
      query.close();
      waitingQuery.close();
      auth.close();
    },
  };
}
