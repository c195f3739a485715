import { createBackoff, createPool, createProcessObservability, handleShutdown, loadConfigOrExit, natsCredentials, sleep } from "@subdata/runtime";
import { connectNats, createCommitWatchPool, createCommitWatcher } from "@subdata/events";
import { createEventPublisher, ensureEventStream, streamRetentionWarning } from "./event-stream.ts";
import { createOutboxListener } from "./outbox-listener.ts";
import { createOutboxRepository } from "./outbox-repository.ts";
import { loadRelayConfig } from "./config.ts";
import { createRelayServer } from "./server.ts";
import { createRelayMetrics } from "./metrics.ts";
import { createRelay } from "./relay.ts";

// The outbox relay process: wiring only.

const config = loadConfigOrExit("subdata-relay", () => loadRelayConfig(process.env));
const streamSettings = {
  stream: config.SUBDATA_EVENTS_STREAM,
  subjectPrefix: config.SUBDATA_EVENTS_SUBJECT_PREFIX,
  replicas: config.SUBDATA_EVENTS_STREAM_REPLICAS,
  maxAgeDays: config.SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS,
};

const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_MAX,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-relay",
});
const observability = createProcessObservability({ service: "relay", logLevel: config.LOG_LEVEL, pool, env: process.env });
const { logger, metrics, tracing } = observability;
const { onRound, onPurge } = createRelayMetrics(metrics, pool);
// An idle client losing its connection must not crash the process; the next round backs off.
pool.on("error", (error) => logger.warn({ err: error }, "idle database connection failed"));
const watchPool = createCommitWatchPool({
  connectionString: config.DATABASE_URL,
  statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  applicationName: "subdata-relay-watch",
  logger,
});

let relay: ReturnType<typeof createRelay> | undefined;
let stopping = false;
// /metrics is served on the health port (SUBDATA_RELAY_HEALTH_PORT): the relay has no other server.
const health = createRelayServer(() => !stopping && (relay?.healthy ?? false), metrics);
const address = await health.listen(config.HOST, config.SUBDATA_RELAY_HEALTH_PORT);
logger.info({ port: address.port }, "relay health endpoint listening");

// Installed before the NATS loop so that a SIGTERM during start-up also exits cleanly.
const stop = new AbortController();
let listener: ReturnType<typeof createOutboxListener> | undefined;
let watcher: ReturnType<typeof createCommitWatcher> | undefined;
let nc: Awaited<ReturnType<typeof connectNats>> | undefined;
handleShutdown({
  logger,
  steps: [
    {
      name: "not ready",
      run: () => {
        stopping = true;
      },
    },
    { name: "start-up", run: () => stop.abort() },
    { name: "listener", run: () => listener?.close() },
    { name: "commit watch", run: () => watcher?.close() },
    // Stops claiming; the batch in hand is published, marked and committed.
    { name: "relay", run: () => relay?.stop() },
    { name: "nats", run: () => nc?.drain() },
    { name: "health", run: () => health.close() },
    { name: "pool", run: () => pool.end() },
    { name: "commit-watch pool", run: () => watchPool.end() },
    { name: "traces", run: () => observability.close() },
  ],
});

// NATS may be down at start: keep trying (the client reconnects by itself once connected).
const startup = createBackoff({ initialMs: 500, maxMs: 15_000 });
while (!nc && !stop.signal.aborted) {
  try {
    nc = await connectNats(config.NATS_URL, "relay", natsCredentials(config));
    const { maxAgeMs } = await ensureEventStream(nc, streamSettings);
    const warning = streamRetentionWarning(streamSettings.stream, maxAgeMs, config.SUBDATA_RELAY_RETENTION_DAYS);
    if (warning) logger.warn({ stream: streamSettings.stream, maxAgeMs }, warning);
  } catch (error) {
    logger.warn({ err: error }, "NATS/JetStream not available yet; retrying");
    await nc?.close().catch(() => {});
    nc = undefined;
    await sleep(startup.next(), stop.signal);
  }
}

if (nc && !stop.signal.aborted) {
  const started = createRelay({
    repository: createOutboxRepository(pool),
    publisher: createEventPublisher(nc, streamSettings),
    logger,
    batchSize: config.SUBDATA_RELAY_BATCH_SIZE,
    rounds: config.SUBDATA_RELAY_ROUNDS,
    pollIntervalMs: config.SUBDATA_RELAY_POLL_INTERVAL_MS,
    retention: { outboxDays: config.SUBDATA_RELAY_RETENTION_DAYS, feedDays: config.SUBDATA_FEED_RETENTION_DAYS, everyMs: 60 * 60 * 1000 },
    onRound,
    onPurge,
    tracing: { tracing, subjectPrefix: streamSettings.subjectPrefix },
  });
  relay = started;
  // Captured changes are seen by polling their commits (no writer notifies: docs/decisions.md);
  // the listener hears the webhook service's hand-backs of events the stream lost.
  watcher = createCommitWatcher({
    db: watchPool,
    logger,
    intervalMs: config.SUBDATA_COMMIT_WATCH_INTERVAL_MS,
    metrics,
    onCommits: () => started.wake(),
    onUnknown: () => started.wake(),
  });
  listener = createOutboxListener({ connectionString: config.DATABASE_URL, logger, onWake: () => started.wake() });
  watcher.start();
  listener.start();
  started.start();
  logger.info({ stream: streamSettings.stream, subjectPrefix: streamSettings.subjectPrefix }, "relay started");
}
