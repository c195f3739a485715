import { createHealthState, createLogger, createPool, handleShutdown } from "@subdata/runtime";
import { loadQueryConfig } from "./config.ts";
import { createQueryServer } from "./server.ts";

// Wiring only: config → read-only pool → server → listen; SIGTERM drains in order.
const config = loadQueryConfig(process.env);
const logger = createLogger({ name: "query", level: config.LOG_LEVEL });
const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-query",
  readOnly: true,
});
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));
const health = createHealthState();
const server = createQueryServer({
  pool,
  serviceToken: config.SUBDATA_SERVICE_TOKEN,
  pageTokenSecret: config.SUBDATA_PAGE_TOKEN_SECRET,
  logger,
  health,
});

handleShutdown({
  logger,
  steps: [
    { name: "health", run: () => health.setServing(false) },
    { name: "server", run: () => server.close() },
    { name: "pool", run: () => pool.end() },
  ],
});

const address = await server.listen(config.HOST, config.PORT);
logger.info({ host: address.address, port: address.port }, "query service listening");
