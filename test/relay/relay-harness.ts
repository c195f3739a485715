import type { NatsConnection } from "@nats-io/transport-node";
import { createLogger, createPool, type Logger, type Pool } from "@subdata/runtime";
import {
  createEventPublisher,
  createOutboxRepository,
  createRelay,
  type EventStreamSettings,
  type Relay,
  type RelayDeps,
} from "@subdata/relay";

export interface TestRelay {
  relay: Relay;
  pool: Pool;
  close(): Promise<void>;
}

/**
 * A relay as the relay's main.ts wires it (subdata_webhook role, real JetStream), limited to the test's own
 * merchants so that it never publishes other suites' events from the shared database.
 */
export function startTestRelay(options: {
  databaseUrl: string;
  nc: NatsConnection;
  stream: EventStreamSettings;
  merchantIds: readonly string[];
  batchSize?: number;
  /** Rounds in flight at once (SUBDATA_RELAY_ROUNDS); default 1. */
  rounds?: number;
  pollIntervalMs?: number;
  ackTimeoutMs?: number;
  faults?: RelayDeps["faults"];
  logger?: Logger;
}): TestRelay {
  const pool = createPool({ connectionString: options.databaseUrl, max: Math.max(2, options.rounds ?? 1), applicationName: "subdata-relay-test" });
  pool.on("error", () => {});
  const relay = createRelay({
    repository: createOutboxRepository(pool, { merchantIds: options.merchantIds }),
    publisher: createEventPublisher(options.nc, { ...options.stream, ackTimeoutMs: options.ackTimeoutMs ?? 5_000 }),
    logger: options.logger ?? createLogger({ name: "relay-test", level: "silent" }),
    batchSize: options.batchSize ?? 100,
    ...(options.rounds ? { rounds: options.rounds } : {}),
    pollIntervalMs: options.pollIntervalMs ?? 100,
    ...(options.faults ? { faults: options.faults } : {}),
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
