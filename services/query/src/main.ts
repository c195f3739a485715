import { createCommitWatchPool } from "@subdata/events";
import { createHealthState, createProcessObservability, handleShutdown, loadConfigOrExit, startMetricsServer, callerCredentialsFrom } from "@subdata/runtime";
import { createChangeNotifier } from "./change-notifier.ts";
import { loadQueryConfig } from "./config.ts";
import { queryServiceNames } from "./routes.ts";
import { createQueryPool } from "./pool.ts";
import { createQueryServer } from "./server.ts";

// Wiring only: config → read-only pool → server → listen; SIGTERM drains in order.
const config = loadConfigOrExit("subdata-query", () => loadQueryConfig(process.env));
const pool = createQueryPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-query",
});
const observability = createProcessObservability({ service: "query", logLevel: config.LOG_LEVEL, pool, env: process.env });
const { logger, metrics, trace, tracing } = observability;
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));
const health = createHealthState({ maxWatches: config.SUBDATA_HEALTH_MAX_WATCHES });
const watchPool = createCommitWatchPool({
  connectionString: config.DATABASE_URL,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-query-changes",
  logger,
});
const changes = createChangeNotifier({
  db: watchPool,
  logger,
  maxWaiters: config.SUBDATA_FEED_MAX_WAITERS,
  pollIntervalMs: config.SUBDATA_COMMIT_WATCH_INTERVAL_MS,
  metrics,
});
const server = createQueryServer({
  pool,
  changes,
  callers: callerCredentialsFrom(config, queryServiceNames),
  pageTokenSecret: config.SUBDATA_PAGE_TOKEN_SECRET,
  acceptedPageTokenSecrets: config.SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED,
  logger,
  health,
  observability: { metrics, trace, tracing },
});
const metricsServer = await startMetricsServer(metrics, config.HOST, config.METRICS_PORT);

handleShutdown({
  logger,
  steps: [
    { name: "health", run: () => health.setServing(false) },
    // GOAWAY to every session, then in-flight RPCs finish.
    // Long polls answer at once, so the drain below does not wait out their 30 s.
    { name: "changes", run: () => changes.close() },
    { name: "server", run: () => server.close() },
    { name: "pool", run: () => pool.end() },
    { name: "commit-watch pool", run: () => watchPool.end() },
    { name: "metrics", run: () => metricsServer.close() },
    { name: "traces", run: () => observability.close() },
  ],
});

const address = await server.listen(config.HOST, config.PORT);
logger.info({ host: address.address, port: address.port, metricsPort: metricsServer.address.port }, "query service listening");
