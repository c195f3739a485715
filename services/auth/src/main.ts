import {
  createHealthState,
  createPool,
  createProcessObservability,
  handleShutdown,
  loadConfigOrExit,
  natsCredentials,
  startMetricsServer,
  callerCredentialsFrom,
} from "@subdata/runtime";
import { createAuditFlushMetrics, createAuditRefusalMetric } from "./audit-metrics.ts";
import { loadAuthConfig } from "./config.ts";
import { authServiceNames } from "./routes.ts";
import { createAuthDependencies } from "./dependencies.ts";
import { createNatsRevocationPublisher } from "./revocation-publisher.ts";
import { createAuthServer } from "./server.ts";

// Wiring only: config → pool, NATS publisher, dependencies, server; SIGTERM drains in reverse.
const config = loadConfigOrExit("subdata-auth", () => loadAuthConfig(process.env));
const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-auth",
});
const observability = createProcessObservability({ service: "auth", logLevel: config.LOG_LEVEL, pool, env: process.env });
const { logger, metrics, trace, tracing } = observability;
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));
const revocations = createNatsRevocationPublisher({ servers: config.NATS_URL, credentials: natsCredentials(config), logger });
const dependencies = createAuthDependencies({
  db: pool,
  logger,
  pageTokenSecret: config.SUBDATA_PAGE_TOKEN_SECRET,
  acceptedPageTokenSecrets: config.SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED,
  revocations,
  onAuditFlush: createAuditFlushMetrics(metrics),
  auditMaxQueued: config.SUBDATA_AUDIT_QUEUE_MAX,
  auditMaxWaitMs: config.SUBDATA_AUDIT_QUEUE_WAIT_MS,
  onAuditRefused: createAuditRefusalMetric(metrics),
  securityEventRetentionDays: config.SUBDATA_SECURITY_EVENT_RETENTION_DAYS,
});
const health = createHealthState({ maxWatches: config.SUBDATA_HEALTH_MAX_WATCHES });
const server = createAuthServer({
  ...dependencies,
  callers: callerCredentialsFrom(config, authServiceNames),
  logger,
  health,
  observability: { metrics, trace, tracing },
});
const metricsServer = await startMetricsServer(metrics, config.HOST, config.METRICS_PORT);

const address = await server.listen(config.HOST, config.PORT);
logger.info({ host: address.address, port: address.port, metricsPort: metricsServer.address.port }, "auth service listening");
dependencies.securityRetention.start();

handleShutdown({
  logger,
  steps: [
    { name: "not serving", run: () => health.setServing(false) },
    // GOAWAY, then in-flight RPCs (and the audit writes they wait for) finish.
    { name: "close server", run: () => server.close() },
    { name: "flush audit and security logs, stop retention", run: () => dependencies.close() },
    { name: "close NATS", run: () => revocations.close() },
    { name: "end pool", run: () => pool.end() },
    { name: "metrics", run: () => metricsServer.close() },
    { name: "traces", run: () => observability.close() },
  ],
});
