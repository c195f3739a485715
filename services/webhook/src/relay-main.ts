import { createLogger, createPool, handleShutdown } from "@subdata/runtime";
import { connectNats, createEventPublisher, ensureEventStream } from "./event-stream.ts";
import { createOutboxListener } from "./outbox-listener.ts";
import { createOutboxRepository } from "./outbox-repository.ts";
import { createBackoff, sleep } from "./relay-backoff.ts";
import { loadRelayConfig } from "./relay-config.ts";
import { createRelayHealthServer } from "./relay-health.ts";
import { createRelay } from "./relay.ts";

// The outbox relay process: wiring only.

const config = loadRelayConfig(process.env);
const logger = createLogger({ name: "subdata-relay", level: config.LOG_LEVEL });
const streamSettings = {
  stream: config.SUBDATA_EVENTS_STREAM,
  subjectPrefix: config.SUBDATA_EVENTS_SUBJECT_PREFIX,
  replicas: config.SUBDATA_EVENTS_STREAM_REPLICAS,
};

const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-relay",
});
// An idle client losing its connection must not crash the process; the next round backs off.
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));

let relay: ReturnType<typeof createRelay> | undefined;
const health = createRelayHealthServer(() => relay?.healthy ?? false);
const address = await health.listen(config.HOST, config.SUBDATA_RELAY_HEALTH_PORT);
logger.info({ port: address.port }, "relay health endpoint listening");

// NATS may be down at start: keep trying (the client reconnects by itself once connected).
const startup = createBackoff({ initialMs: 500, maxMs: 15_000 });
let nc: Awaited<ReturnType<typeof connectNats>> | undefined;
while (!nc) {
  try {
    nc = await connectNats(config.NATS_URL, "subdata-relay");
    await ensureEventStream(nc, streamSettings);
  } catch (error) {
    logger.warn({ err: error }, "NATS/JetStream not available yet; retrying");
    await nc?.close().catch(() => {});
    nc = undefined;
    await sleep(startup.next());
  }
}

relay = createRelay({
  repository: createOutboxRepository(pool),
  publisher: createEventPublisher(nc, streamSettings),
  logger,
  batchSize: config.SUBDATA_RELAY_BATCH_SIZE,
  pollIntervalMs: config.SUBDATA_RELAY_POLL_INTERVAL_MS,
  retention: { days: config.SUBDATA_RELAY_RETENTION_DAYS, everyMs: 60 * 60 * 1000 },
});
const started = relay;
const listener = createOutboxListener({ connectionString: config.DATABASE_URL, logger, onWake: () => started.wake() });
listener.start();
started.start();
logger.info({ stream: streamSettings.stream, subjectPrefix: streamSettings.subjectPrefix }, "relay started");

handleShutdown({
  logger,
  steps: [
    { name: "listener", run: () => listener.close() },
    { name: "relay", run: () => started.stop() },
    { name: "nats", run: () => nc.drain() },
    { name: "health", run: () => health.close() },
    { name: "pool", run: () => pool.end() },
  ],
});
