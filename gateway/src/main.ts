import {
  createHealthState,
  createLogger,
  createMetrics,
  createTraceScope,
  handleShutdown,
  loadConfigOrExit,
  natsCredentials,
  sendTraceContext,
  startMetricsServer,
  tracingFromEnv,
} from "@subdata/runtime";
import { createApiKeyCache } from "./api-key-cache.ts";
import { loadGatewayConfig } from "./config.ts";
import { createRevocationListener } from "./revocation-listener.ts";
import { createGateway } from "./server.ts";
import { createUpstreamClients } from "./upstream-clients.ts";
import { createWaitingReads } from "./waiting-reads.ts";
import { createThrottledAuthentications } from "./throttled-authentications.ts";

// Wiring only: config → upstream clients, key cache + revocation listener, gateway; SIGTERM drains.
const config = loadConfigOrExit("subdata-gateway", () => loadGatewayConfig(process.env));
const trace = createTraceScope();
const logger = createLogger({ name: "gateway", level: config.LOG_LEVEL, context: trace.logFields });
const metrics = createMetrics({ service: "gateway" });
const tracing = tracingFromEnv(process.env, "subdata-gateway", logger);
const health = createHealthState();
const upstream = createUpstreamClients({
  queryUrl: config.SUBDATA_QUERY_URL,
  authUrl: config.SUBDATA_AUTH_URL,
  serviceToken: config.SUBDATA_GATEWAY_TOKEN,
  queryQueueMax: config.SUBDATA_QUERY_QUEUE_MAX,
  interceptors: [sendTraceContext(trace, tracing)],
  metrics,
});
const apiKeyCache = createApiKeyCache({
  ttlMs: config.SUBDATA_API_KEY_CACHE_TTL_SECONDS * 1000,
  maxEntries: config.SUBDATA_API_KEY_CACHE_MAX_ENTRIES,
  now: Date.now,
});
const revocations = createRevocationListener({ natsUrl: config.NATS_URL, credentials: natsCredentials(config), cache: apiKeyCache, logger });
const waitingReads = createWaitingReads({ maxTotal: config.SUBDATA_FEED_MAX_WAITING, maxPerKey: config.SUBDATA_FEED_MAX_WAITING_PER_KEY });
const throttledAuthentications = createThrottledAuthentications({
  apiKeys: upstream.clients.apiKeys,
  windowSeconds: config.SUBDATA_AUTH_FAILURE_WINDOW_SECONDS,
  maxAddresses: config.SUBDATA_AUTH_FAILURE_MAX_CLIENTS,
  timeoutMs: config.SUBDATA_UPSTREAM_TIMEOUT_MS,
  logger,
});
const gateway = createGateway({
  clients: upstream.clients,
  logger,
  config,
  apiKeyCache,
  metrics,
  trace,
  tracing,
  health,
  waitingReads,
  throttledAuthentications,
});

revocations.start();
throttledAuthentications.start();
const metricsServer = await startMetricsServer(metrics, config.HOST, config.METRICS_PORT);
const address = await gateway.listen({ host: config.HOST, port: config.PORT });
logger.info({ address, metricsPort: metricsServer.address.port }, "gateway listening");

handleShutdown({
  logger,
  // The delay plus the drain must fit in terminationGracePeriodSeconds.
  timeoutMs: config.SUBDATA_SHUTDOWN_DELAY_MS + 25_000,
  steps: [
    // /readyz → 503 first; keep serving while load balancers notice and take us out of rotation.
    { name: "not ready", run: () => health.setServing(false) },
    { name: "delay", run: () => new Promise((resolve) => setTimeout(resolve, config.SUBDATA_SHUTDOWN_DELAY_MS)) },
    // Long polls answer 503 at once (followers reconnect elsewhere), so the drain below does not wait them out.
    { name: "long polls", run: () => waitingReads.drain() },
    // Stops accepting, closes idle keep-alive connections, waits for in-flight requests (and their audit writes).
    { name: "http", run: () => gateway.close() },
    // The last window's throttled attempts, while the auth client is still open.
    { name: "throttled authentications", run: () => throttledAuthentications.close() },
    { name: "nats", run: () => revocations.close() },
    { name: "upstream", run: () => upstream.close() },
    { name: "metrics", run: () => metricsServer.close() },
    { name: "traces", run: () => tracing.shutdown() },
  ],
});
