import { createClient } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import {
  createHealthState,
  createPool,
  createProcessObservability,
  createServiceTransport,
  handleShutdown,
  loadConfigOrExit,
  sendTraceContext,
  startMetricsServer,
  callerCredentialsFrom,
} from "@subdata/runtime";
import { createChangeRepository } from "./change-repository.ts";
import { loadConsoleConfig } from "./config.ts";
import { consoleServiceNames } from "./routes.ts";
import { createConsoleServer } from "./server.ts";
import { createSessionRepository } from "./session-repository.ts";
import { createConsoleWeb } from "./web/web-server.ts";

// Wiring only: config → pool, upstream transports → RPC server (for the app) and web server (for browsers).
const config = loadConfigOrExit("subdata-console", () => loadConsoleConfig(process.env));
const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-console",
});
const observability = createProcessObservability({ service: "console", logLevel: config.LOG_LEVEL, pool, env: process.env });
const { logger, metrics, trace, tracing } = observability;
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));
const sessions = createSessionRepository(pool);
const auth = createServiceTransport({
  baseUrl: config.SUBDATA_AUTH_URL,
  serviceToken: config.SUBDATA_CONSOLE_TOKEN,
  interceptors: [sendTraceContext(trace, tracing)],
});
const webhook = createServiceTransport({
  baseUrl: config.SUBDATA_WEBHOOK_URL,
  serviceToken: config.SUBDATA_CONSOLE_TOKEN,
  interceptors: [sendTraceContext(trace, tracing)],
});
const health = createHealthState({ maxWatches: config.SUBDATA_HEALTH_MAX_WATCHES });
const server = createConsoleServer({
  sessions,
  publicUrl: config.SUBDATA_CONSOLE_PUBLIC_URL,
  callers: callerCredentialsFrom(config, consoleServiceNames),
  logger,
  health,
  observability: { metrics, trace, tracing },
});
const web = createConsoleWeb({
  sessions,
  changes: createChangeRepository(pool),
  clients: {
    apiKeys: createClient(ApiKeyService, auth.transport),
    audit: createClient(AuditService, auth.transport),
    endpoints: createClient(WebhookEndpointService, webhook.transport),
    deliveries: createClient(WebhookDeliveryService, webhook.transport),
  },
  publicUrl: config.SUBDATA_CONSOLE_PUBLIC_URL,
  frameAncestors: config.SUBDATA_CONSOLE_FRAME_ANCESTORS,
  upstreamTimeoutMs: config.SUBDATA_UPSTREAM_TIMEOUT_MS,
  logger,
});
const metricsServer = await startMetricsServer(metrics, config.HOST, config.METRICS_PORT);

const address = await server.listen(config.HOST, config.PORT);
await web.listen({ host: config.HOST, port: config.SUBDATA_CONSOLE_WEB_PORT });
const webPort = (web.server.address() as { port: number }).port;
logger.info({ host: address.address, port: address.port, webPort, metricsPort: metricsServer.address.port }, "console service listening");

handleShutdown({
  logger,
  steps: [
    { name: "not serving", run: () => health.setServing(false) },
    { name: "close web server", run: () => web.close() },
    { name: "close RPC server", run: () => server.close() },
    {
      name: "close upstream sessions",
      run: async () => {
        auth.close();
        webhook.close();
      },
    },
    { name: "end pool", run: () => pool.end() },
    { name: "metrics", run: () => metricsServer.close() },
    { name: "traces", run: () => observability.close() },
  ],
});
