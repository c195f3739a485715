import { eventStreamConfigShape } from "@subdata/events";
import { ConfigError, env, loadConfig, natsCredentials } from "@subdata/runtime";
import { z } from "zod";

/** The relay's environment. It connects to Postgres as subdata_webhook (DATABASE_URL). */
export const relayConfigShape = {
  HOST: env.host(),
  /** Plain HTTP liveness/readiness (GET /healthz, /readyz); 0 picks a free port. */
  SUBDATA_RELAY_HEALTH_PORT: env.port(8094),
  LOG_LEVEL: env.logLevel(),
  DATABASE_URL: env.databaseUrl(),
  /** A connection per round in flight, one for the purge. */
  DATABASE_POOL_MAX: env.positiveInt(3),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  // NATS_URL, SUBDATA_EVENTS_STREAM, SUBDATA_EVENTS_SUBJECT_PREFIX: the same as the webhook service's.
  ...eventStreamConfigShape,
  /** 1 on one machine; 3 in production (see README.md). */
  SUBDATA_EVENTS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * Rows claimed per transaction; also the bound on publishes in flight per round. 500: a claim, a
   * mark and a commit cost about the same for 500 rows as for 100, so larger rounds cost less per row.
   */
  SUBDATA_RELAY_BATCH_SIZE: z.coerce.number().int().min(1).max(5_000).default(500),
  /** Rounds in flight at once: one talks to Postgres while another waits for PubAcks (see relay.ts). */
  SUBDATA_RELAY_ROUNDS: z.coerce.number().int().min(1).max(8).default(2),
  /**
   * How often the relay looks for new commits of captured changes (one statement on a connection of
   * its own): an event is claimed within this of its commit.
   */
  SUBDATA_COMMIT_WATCH_INTERVAL_MS: env.positiveInt(10),
  /** Fallback poll when no wake-up arrives (a lost one costs at most this much latency). */
  SUBDATA_RELAY_POLL_INTERVAL_MS: env.positiveInt(1_000),
  /** Published outbox rows older than this are deleted (JetStream keeps its own copy for max_age). */
  SUBDATA_RELAY_RETENTION_DAYS: env.positiveInt(7),
  /**
   * The change feed (GET /v1/events) keeps events this long; older commits are purged and a cursor
   * from before them answers 410. The feed promises at least 30 days.
   */
  SUBDATA_FEED_RETENTION_DAYS: z.coerce.number().int().min(30, "must be at least 30: the change feed keeps events at least 30 days").default(400),
  /** The stream's max_age: how long JetStream keeps an event; never less than SUBDATA_RELAY_RETENTION_DAYS. */
  SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS: z.coerce.number().int().min(1).max(3_650).default(7),
} as const;

export function loadRelayConfig(source: NodeJS.ProcessEnv) {
  const config = loadConfig(relayConfigShape, source);
  natsCredentials(config);
  // A stream that forgets events before the outbox does leaves a consumer that fell that far behind
  // with a hole and no record of what was in it.
  if (config.SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS < config.SUBDATA_RELAY_RETENTION_DAYS) {
    throw new ConfigError([
      `SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS is invalid: the stream would keep events ${config.SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS} days, ` +
        `less than SUBDATA_RELAY_RETENTION_DAYS (${config.SUBDATA_RELAY_RETENTION_DAYS}) keeps them in the outbox`,
    ]);
  }
  // The webhook service accepts an event only if its change_events row still exists: a stream that
  // kept events longer than the feed would hand it events it must refuse as unknown.
  if (config.SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS > config.SUBDATA_FEED_RETENTION_DAYS) {
    throw new ConfigError([
      `SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS is invalid: the stream would keep events ${config.SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS} days, ` +
        `more than SUBDATA_FEED_RETENTION_DAYS (${config.SUBDATA_FEED_RETENTION_DAYS}) keeps the change_events rows that webhook ingest checks them against`,
    ]);
  }
  return config;
}
