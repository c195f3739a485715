import {
  createBackoff,
  createHealthState,
  createPool,
  createProcessObservability,
  handleShutdown,
  loadConfigOrExit,
  natsCredentials,
  sleep,
  startMetricsServer,
  callerCredentialsFrom,
} from "@subdata/runtime";
import { loadWebhookConfig } from "./config.ts";
import { webhookServiceNames } from "./routes.ts";
import { createRefusedEventMetric, createRepublishedEventMetric, registerConsumerMetrics } from "./ingest/consumer-metrics.ts";
import { createDeliveryMetrics } from "./delivery/delivery-metrics.ts";
import { connectNats } from "@subdata/events";
import { createDeliveryPipeline, type DeliveryPipeline } from "./pipeline.ts";
import { deliveryPipelineSettings } from "./pipeline-config.ts";
import { createSecretBox } from "./secret-box.ts";
import { createWebhookServer } from "./server.ts";

// Wiring only: config → pool, secret box → RPC server; then NATS → delivery pipeline. SIGTERM drains in order.
const config = loadConfigOrExit("subdata-webhook", () => loadWebhookConfig(process.env));
const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-webhook",
});
const observability = createProcessObservability({ service: "webhook", logLevel: config.LOG_LEVEL, pool, env: process.env });
const { logger, metrics, trace, tracing } = observability;
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));
const secretBox = createSecretBox(config.SUBDATA_WEBHOOK_SECRET_KEY, config.SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS);
const health = createHealthState({ maxWatches: config.SUBDATA_HEALTH_MAX_WATCHES });

let pipeline: DeliveryPipeline | undefined;
let nats: Awaited<ReturnType<typeof connectNats>> | undefined;
const stopping = new AbortController();

const server = createWebhookServer({
  pool,
  callers: callerCredentialsFrom(config, webhookServiceNames),
  pageTokenSecret: config.SUBDATA_PAGE_TOKEN_SECRET,
  acceptedPageTokenSecrets: config.SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED,
  secretBox,
  allowPrivate: config.SUBDATA_WEBHOOK_ALLOW_PRIVATE,
  logger,
  // Until the pipeline runs, scheduled rows simply wait in Postgres for it.
  pipeline: { wake: () => pipeline?.wake() },
  health,
  observability: { metrics, trace, tracing },
});
const pipelineSettings = deliveryPipelineSettings(config);
const onAttempt = createDeliveryMetrics(metrics);
registerConsumerMetrics(metrics, { nats: () => nats, stream: pipelineSettings.stream, consumer: pipelineSettings.consumerName });
const onRefusedEvent = createRefusedEventMetric(metrics);
const onRepublishedEvents = createRepublishedEventMetric(metrics);
const metricsServer = await startMetricsServer(metrics, config.HOST, config.METRICS_PORT);

handleShutdown({
  logger,
  steps: [
    { name: "health", run: () => health.setServing(false) },
    { name: "connect", run: () => stopping.abort() },
    // GOAWAY to every session; in-flight RPCs finish.
    { name: "server", run: () => server.close() },
    // The consumer stops pulling (the message in hand is stored and acked), in-flight POSTs finish and are recorded.
    { name: "pipeline", run: () => pipeline?.stop() },
    { name: "nats", run: () => nats?.drain() },
    { name: "pool", run: () => pool.end() },
    { name: "metrics", run: () => metricsServer.close() },
    { name: "traces", run: () => observability.close() },
  ],
});

const address = await server.listen(config.HOST, config.PORT);
logger.info({ host: address.address, port: address.port, metricsPort: metricsServer.address.port }, "webhook service listening");

// The RPCs do not need NATS, so they serve while it is down; the pipeline starts once it answers.
const backoff = createBackoff({ initialMs: 500, maxMs: 15_000 });
while (nats === undefined && !stopping.signal.aborted) {
  try {
    nats = await connectNats(config.NATS_URL, "webhook", natsCredentials(config));
  } catch (error) {
    logger.warn({ err: error }, "NATS not available yet; retrying");
    await sleep(backoff.next(), stopping.signal);
  }
}
if (nats !== undefined && !stopping.signal.aborted) {
  pipeline = createDeliveryPipeline({ pool, nats, secretBox, config: pipelineSettings, logger, onAttempt, tracing, onRefusedEvent, onRepublishedEvents });
  pipeline.start();
  logger.info("delivery pipeline started");
}
