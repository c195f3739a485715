import { eventStreamConfigShape } from "@subdata/events";
import { ConfigError, env } from "@subdata/runtime";
import { z } from "zod";
import { DEFAULT_RETRY_SCHEDULE, parseDuration, parseRetrySchedule } from "./delivery/retry-schedule.ts";

/**
 * The environment of the delivery pipeline, as a loadConfig shape: config.ts spreads it into the
 * webhook service's shape, and `deliveryPipelineSettings(config)` turns the result into the settings
 * createDeliveryPipeline takes. Bad values fail start-up with a message naming the variable.
 */

function parsedWith<T>(parse: (text: string) => T) {
  return (text: string, context: z.RefinementCtx): T => {
    try {
      return parse(text);
    } catch (error) {
      context.addIssue({ code: "custom", message: (error as Error).message });
      return z.NEVER;
    }
  };
}

export const deliveryPipelineConfigShape = {
  /** Allow webhook targets on loopback/private/link-local addresses (the local dev stack sets true). */
  SUBDATA_WEBHOOK_ALLOW_PRIVATE: env.boolean(false),
  /** Delays before attempt 1, 2, …; after the last attempt the delivery is FAILED. */
  SUBDATA_WEBHOOK_RETRY_SCHEDULE: z.string().default(DEFAULT_RETRY_SCHEDULE).transform(parsedWith(parseRetrySchedule)),
  /**
   * POSTs in flight per replica. 512: a healthy endpoint may hold half (256) and is claimed for once
   * half of that is free, so a fast receiver gets 128–256 deliveries per claim statement. An endpoint's
   * room comes back only when its attempts are recorded, so its slots go round a claim → POST → record
   * cycle, and a larger cap overlaps more of it (one fast receiver: +9 % deliveries/s at 256 against 128,
   * docs/benchmarks.md). Slow or failing receivers are bounded per endpoint and merchant.
   */
  SUBDATA_WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(512),
  /**
   * Deliveries in flight at once to one endpoint, across every replica (claimed, not yet recorded).
   * Unset: half of SUBDATA_WEBHOOK_CONCURRENCY. An endpoint that is failing gets a sixty-fourth of it.
   */
  SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: z.coerce.number().int().min(1).max(100_000).optional(),
  /**
   * Deliveries in flight at once to all of one merchant's endpoints, across every replica. Unset: half
   * of SUBDATA_WEBHOOK_CONCURRENCY, so a merchant whose receivers are slow holds at most half of one
   * replica's slots. At least the endpoint cap, at most SUBDATA_WEBHOOK_CONCURRENCY.
   */
  SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: z.coerce.number().int().min(1).max(100_000).optional(),
  // NATS_URL, SUBDATA_EVENTS_STREAM, SUBDATA_EVENTS_SUBJECT_PREFIX: the same as the relay's.
  ...eventStreamConfigShape,
  /** Durable consumer name, shared by every replica. */
  SUBDATA_WEBHOOK_CONSUMER: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, "must be a JetStream consumer name")
    .default("webhook-deliveries"),
  /** An endpoint with no 2xx for this long is disabled. */
  SUBDATA_WEBHOOK_DISABLE_AFTER: z.string().default("5d").transform(parsedWith(parseDuration)),
  /**
   * The ingest leader's lease (ingest-lease.ts): a leader that cannot renew it for this long (frozen,
   * cut off from Postgres) stops, and a standby takes over. Above the statement timeout plus its
   * client-side margin (a renewal may wait that long), well below the consumer's ack wait.
   */
  SUBDATA_WEBHOOK_INGEST_LEASE_MS: z.coerce.number().int().min(1_000).max(120_000).default(15_000),
} as const;

export type DeliveryPipelineConfig = z.infer<z.ZodObject<typeof deliveryPipelineConfigShape>>;

export interface DeliveryPipelineSettings {
  allowPrivate: boolean;
  /** Milliseconds before attempt 1, 2, … */
  retrySchedule: readonly number[];
  concurrency: number;
  stream: string;
  subjectPrefix: string;
  consumerName: string;
  disableAfterMs: number;
  /** In flight per healthy endpoint, across replicas. Default: half of `concurrency` (at least 1). */
  perEndpointConcurrency?: number;
  /** In flight per merchant, across replicas. Default: half of `concurrency` (at least 1), never below perEndpointConcurrency. */
  perMerchantConcurrency?: number;
  /**
   * In flight per endpoint whose last attempts failed (failing_since set): its retries wait in the
   * table anyway. Default: a sixty-fourth of `concurrency` (at least 1; 8 with the default 512),
   * never above perEndpointConcurrency.
   */
  failingEndpointConcurrency?: number;
  /** Total deadline of one POST. Default 15 s (the contract's). */
  requestTimeoutMs?: number;
  /** A claimed delivery whose worker died is retried after this. Default: request timeout + 15 s. */
  leaseMs?: number;
  /** Fallback poll for due deliveries. Default 1 s. */
  pollIntervalMs?: number;
  /** JetStream ack_wait of the consumer. Default 30 s. */
  ackWaitMs?: number;
  /** Redelivery delay of an event that could not be stored (database down). Default 5 s. */
  storeRetryMs?: number;
  /** The ingest lease's TTL. Default 15 s. */
  ingestLeaseMs?: number;
}

/**
 * The in-flight caps, defaults applied; throws a ConfigError naming the variables when they cannot
 * work together (loadWebhookConfig calls it, so a bad pair stops the start).
 */
export function inFlightCaps(config: DeliveryPipelineConfig): { perEndpoint: number; perMerchant: number } {
  const half = defaultInFlightCap(config.SUBDATA_WEBHOOK_CONCURRENCY);
  const perEndpoint = config.SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT ?? half;
  const perMerchant = config.SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT ?? Math.max(half, perEndpoint);
  const problems: string[] = [];
  if (perMerchant < perEndpoint)
    problems.push(
      `SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT is invalid: ${perMerchant} is below SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT (${perEndpoint}); one endpoint could never use its cap`,
    );
  if (perMerchant > config.SUBDATA_WEBHOOK_CONCURRENCY)
    problems.push(
      `SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT is invalid: ${perMerchant} is above SUBDATA_WEBHOOK_CONCURRENCY (${config.SUBDATA_WEBHOOK_CONCURRENCY}); one merchant could hold every slot of a replica`,
    );
  if (problems.length > 0) throw new ConfigError(problems);
  return { perEndpoint, perMerchant };
}

/** The in-flight cap of an endpoint when none is set: half of the replica's slots (at least 1); a merchant's default is at least this. */
export function defaultInFlightCap(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency / 2));
}

/** The in-flight cap of a failing endpoint when none is set: a sixty-fourth of the replica's slots (at least 1). */
export function failingEndpointCap(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency / 64));
}

export function deliveryPipelineSettings(config: DeliveryPipelineConfig): DeliveryPipelineSettings {
  const caps = inFlightCaps(config);
  return {
    allowPrivate: config.SUBDATA_WEBHOOK_ALLOW_PRIVATE,
    retrySchedule: config.SUBDATA_WEBHOOK_RETRY_SCHEDULE,
    concurrency: config.SUBDATA_WEBHOOK_CONCURRENCY,
    stream: config.SUBDATA_EVENTS_STREAM,
    subjectPrefix: config.SUBDATA_EVENTS_SUBJECT_PREFIX,
    consumerName: config.SUBDATA_WEBHOOK_CONSUMER,
    disableAfterMs: config.SUBDATA_WEBHOOK_DISABLE_AFTER,
    perEndpointConcurrency: caps.perEndpoint,
    perMerchantConcurrency: caps.perMerchant,
    ingestLeaseMs: config.SUBDATA_WEBHOOK_INGEST_LEASE_MS,
  };
}

/** "5d", "36h", "90m": the largest unit that divides exactly. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
