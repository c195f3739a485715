import type { NatsConnection } from "@nats-io/transport-node";
import {
  createEventPublisher,
  createOutboxRepository,
  createRelay,
  type EventStreamSettings,
  type OutboxRepository,
  type PurgedTable,
  type Relay,
  type RetentionSettings,
} from "@subdata/relay";
import { createLogger, createPool, type Logger, type Pool } from "@subdata/runtime";
import { createCapturedSpans } from "@subdata/runtime/test-support";

export interface TestRelay {
  relay: Relay;
  pool: Pool;
  close(): Promise<void>;
}

/**
 * A relay as the relay's main.ts wires it (subdata_webhook role, real JetStream). It publishes every
 * pending row of its database, so the test gives it a database of its own (test/support/test-database.ts).
 */
export function startTestRelay(options: {
  databaseUrl: string;
  nc: NatsConnection;
  stream: EventStreamSettings;
  batchSize?: number;
  /** Rounds in flight at once (SUBDATA_RELAY_ROUNDS); default 1. */
  rounds?: number;
  pollIntervalMs?: number;
  ackTimeoutMs?: number;
  /** The relay's purge (unset: none). */
  retention?: RetentionSettings;
  onPurge?: (table: PurgedTable, count: number) => void;
  /** Wraps the outbox repository, e.g. with crashBeforeMark. */
  wrapRepository?: (repository: OutboxRepository) => OutboxRepository;
  logger?: Logger;
}): TestRelay {
  const pool = createPool({ connectionString: options.databaseUrl, max: Math.max(2, options.rounds ?? 1), applicationName: "subdata-relay-test" });
  pool.on("error", () => {});
  const repository = createOutboxRepository(pool);
  const relay = createRelay({
    repository: options.wrapRepository ? options.wrapRepository(repository) : repository,
    publisher: createEventPublisher(options.nc, { ...options.stream, ackTimeoutMs: options.ackTimeoutMs ?? 5_000 }),
    logger: options.logger ?? createLogger({ name: "relay-test", level: "silent" }),
    batchSize: options.batchSize ?? 100,
    ...(options.rounds ? { rounds: options.rounds } : {}),
    pollIntervalMs: options.pollIntervalMs ?? 100,
    ...(options.retention ? { retention: options.retention } : {}),
    ...(options.onPurge ? { onPurge: options.onPurge } : {}),
    tracing: { tracing: createCapturedSpans().tracing, subjectPrefix: options.stream.subjectPrefix },
  });
  return {
    relay,
    pool,
    async close() {
      await relay.stop();
      await pool.end();
    },
  };
}

/**
 * The outbox as a relay sees it when its process dies after publishing a batch and before marking it:
 * `crash` throws once the batch was published, so the transaction rolls back and every row stays pending.
 */
export function crashBeforeMark(repository: OutboxRepository, crash: () => never): OutboxRepository {
  return {
    ...repository,
    withClaimedBatch: (limit, handle) =>
      repository.withClaimedBatch(limit, async (rows) => {
        await handle(rows);
        crash();
      }),
  };
}
