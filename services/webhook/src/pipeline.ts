import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger, Pool, Tracing } from "@subdata/runtime";
import { type Clock, createWebhookSender, RESPONSE_BODY_LOG_BYTES } from "./delivery/deliver-webhook.ts";
import { type DeliveryPipelineSettings, defaultInFlightCap, failingEndpointCap, formatDuration } from "./pipeline-config.ts";
import { type DeliveryWakeups, listenForDeliveries } from "./delivery/delivery-wakeups.ts";
import { createClaimRepository } from "./delivery/claim-repository.ts";
import { createDeliveryWorker, type DeliveryWorkerOptions } from "./delivery/delivery-worker.ts";
import { createEventConsumer } from "./ingest/event-consumer.ts";
import { createEventIngester } from "./ingest/event-ingester.ts";
import type { RefusalReason } from "./ingest/event-provenance.ts";
import { createSafeHttpClient, type Resolver } from "./delivery/safe-http-client.ts";
import type { SecretBox } from "./secret-box.ts";

/**
 * The webhook delivery pipeline: the JetStream consumer that turns events into stored deliveries, and
 * the workers that send due deliveries. main.ts creates it once, starts it, and stops it on SIGTERM
 * before closing the pool and the NATS connection.
 */

export interface DeliveryPipelineDeps {
  /** The subdata_webhook role's pool. */
  pool: Pool;
  nats: NatsConnection;
  secretBox: SecretBox;
  config: DeliveryPipelineSettings;
  logger: Logger;
  clock?: Clock;
  /** Host name resolution for webhook targets; the system resolver unless given (a test points names at its receivers). */
  resolve?: Resolver;
  /** Called after each attempt was recorded (main.ts feeds the delivery metrics). */
  onAttempt?: DeliveryWorkerOptions["onAttempt"];
  /** Ingest (CONSUMER) and delivery attempt (CLIENT) spans, in the relay's traces. */
  tracing: Tracing;
  /** Called once per consumed event dropped instead of stored (main.ts counts them; event-provenance.ts says why). */
  onRefusedEvent?: ((reason: RefusalReason) => void) | undefined;
  /** Called with how many events the stream lost before ingest stored them and were handed back to the relay (main.ts counts them). */
  onRepublishedEvents?: ((count: number) => void) | undefined;
}

export interface DeliveryPipeline {
  start(): void;
  /** Deliver due rows now, e.g. after ResendEvent inserted some (NOTIFY subdata_webhook_delivery also works). */
  wake(): void;
  /** Stops pulling events, lets in-flight deliveries finish and be recorded, then resolves. */
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date() };

export function createDeliveryPipeline(deps: DeliveryPipelineDeps): DeliveryPipeline {
  const { config, logger } = deps;
  const requestTimeoutMs = config.requestTimeoutMs ?? 15_000;
  const http = createSafeHttpClient({
    allowPrivate: config.allowPrivate,
    timeoutMs: requestTimeoutMs,
    maxResponseBytes: RESPONSE_BODY_LOG_BYTES,
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
  });
  const worker = createDeliveryWorker({
    pool: deps.pool,
    claims: createClaimRepository(deps.pool),
    secretBox: deps.secretBox,
    sender: createWebhookSender({ http, clock: deps.clock ?? systemClock }),
    logger,
    concurrency: config.concurrency,
    perEndpointConcurrency: config.perEndpointConcurrency ?? defaultInFlightCap(config.concurrency),
    failingEndpointConcurrency: config.failingEndpointConcurrency ?? failingEndpointCap(config.concurrency),
    perMerchantConcurrency: config.perMerchantConcurrency ?? defaultInFlightCap(config.concurrency),
    leaseMs: config.leaseMs ?? requestTimeoutMs + 15_000,
    pollIntervalMs: config.pollIntervalMs ?? 1_000,
    retrySchedule: config.retrySchedule,
    disableAfterMs: config.disableAfterMs,
    disableReason: `no successful delivery for ${formatDuration(config.disableAfterMs)}`,
    onAttempt: deps.onAttempt,
    tracing: deps.tracing,
  });
  const consumer = createEventConsumer(deps.nats, {
    stream: config.stream,
    subjectPrefix: config.subjectPrefix,
    consumerName: config.consumerName,
    ackWaitMs: config.ackWaitMs ?? 30_000,
    logger,
    onRepublished: deps.onRepublishedEvents,
    handle: createEventIngester({
      pool: deps.pool,
      logger,
      storeRetryMs: config.storeRetryMs ?? 5_000,
      ...(config.ingestLeaseMs === undefined ? {} : { leaseTtlMs: config.ingestLeaseMs }),
      onDeliveries: (endpointIds) => worker.wake(endpointIds),
      tracing: deps.tracing,
      onRefused: deps.onRefusedEvent,
    }),
  });
  let wakeups: DeliveryWakeups | undefined;
  let started = false;

  return {
    start() {
      if (started) return;
      started = true;
      wakeups = listenForDeliveries(deps.pool, (endpointIds) => worker.wake(endpointIds), logger);
      worker.start();
      consumer.start();
    },
    wake: () => worker.wake(),
    async stop() {
      // Both at once: the worker stops claiming as soon as the process is told to stop, rather than
      // after the consumer has stored what it holds (those deliveries wait in the table for a replica).
      await Promise.all([consumer.stop(), worker.stop()]);
      await wakeups?.close();
      await http.close();
    },
  };
}
