import { randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { FieldMaskSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { type ChangeEvent, ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type SubscriptionEvent, SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { PlanInterval, SubscriptionSchema, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import {
  type ChangeEventRow,
  type ChargeSnapshot,
  changeEventFromRow,
  eventTypeName,
  type ResourceType,
  type SubscriptionSnapshot,
  subscriptionEventFromChangeEvent,
} from "@subdata/events";
import { createLogger, createPool, type Logger, type Pool } from "@subdata/runtime";
import { createCapturedSpans } from "@subdata/runtime/test-support";
import { type DeliveryPipeline, type DeliveryPipelineSettings, createDeliveryPipeline } from "@subdata/webhook";
import { createSecretBox, generateSigningSecret, type SecretBox } from "@subdata/webhook";
import { inject } from "vitest";
import type { ClaimedDelivery } from "../../../services/webhook/src/delivery/claim-repository.ts";
import type { FinishedAttempt } from "../../../services/webhook/src/delivery/record-repository.ts";
import { createFixtures, type Fixtures } from "../../support/fixtures.ts";
import { createTestDatabase } from "../../support/test-database.ts";

/**
 * Everything a delivery test needs: a database of its own (a pipeline delivers every due row of its
 * database), the webhook role's pool and an admin pool for fixtures and assertions on it, a NATS
 * connection, and a JetStream stream and subject prefix of its own (named with the run id and the tag).
 */

export interface EndpointOptions {
  merchantId: string;
  url: string;
  eventTypes?: string[];
  /** Default: a fresh whsec_ secret. */
  secret?: string;
  /** A previous secret still valid until `previousExpiresAt` (timestamptz text). */
  previousSecret?: string;
  previousExpiresAt?: string;
}

export interface EventOptions {
  merchantId: string;
  subscriptionId: string;
  version: number;
  type?: EventType;
  id?: string;
  /** Sent as the message's `traceparent` header, as the relay does (it always sends one). */
  traceparent?: string;
}

export interface Harness {
  admin: Pool;
  pool: Pool;
  nc: NatsConnection;
  secretBox: SecretBox;
  secretKey: string;
  stream: string;
  subjectPrefix: string;
  fixtures: Fixtures;
  logger: Logger;
  createEndpoint(options: EndpointOptions): Promise<{ id: string; secret: string }>;
  /** Records a subscription's change_events row and publishes its event as the relay would; returns the event. */
  publish(options: EventOptions): Promise<SubscriptionEvent>;
  /** publish for many events: their rows in one statement, then their messages (in the order given). */
  publishAll(options: readonly EventOptions[]): Promise<SubscriptionEvent[]>;
  /** Records a subscription's change_events row, without publishing; returns the event the relay would publish for it. */
  record(options: EventOptions): Promise<SubscriptionEvent>;
  /** Records a charge's change_events row (charge.created at version 1, else charge.updated) and publishes its ChangeEvent as the relay would. */
  publishCharge(options: { merchantId: string; chargeId: string; version: number }): Promise<ChangeEvent>;
  /**
   * Publishes a subscription event as given, with a message id of its own (no dedupe), on the subject of
   * `subjectMerchantId` (default: the event's merchant): a forgery, or a recorded event's genuine copy.
   */
  publishEvent(event: SubscriptionEvent, subjectMerchantId?: string): Promise<void>;
  publishRaw(subjectMerchantId: string, data: Uint8Array, id: string): Promise<void>;
  /** The URL of this harness's database for the webhook role (for a pipeline in another process). */
  webhookDatabaseUrl: string;
  /** The URL of this harness's database for the query role (for a query server on it). */
  queryDatabaseUrl: string;
  settings(overrides?: Partial<DeliveryPipelineSettings>): DeliveryPipelineSettings;
  startPipeline(overrides?: Partial<DeliveryPipelineSettings>): DeliveryPipeline;
  close(): Promise<void>;
}

export function newEventId(): string {
  return `evt_${randomBytes(16).toString("hex")}`;
}

export function newSubscriptionId(): string {
  return `sub_${randomBytes(16).toString("hex")}`;
}

function subscription(merchantId: string, id: string, version: number) {
  return create(SubscriptionSchema, {
    id,
    merchantId,
    status: version % 2 ? SubscriptionStatus.ACTIVE : SubscriptionStatus.PAUSED,
    customer: { id: "cus_1", email: "jane@example.com", name: "Jane" },
    plan: { id: "plan_1", name: "Coffee", interval: PlanInterval.MONTH, intervalCount: 1 },
    price: { amountMinor: 1999n, currencyCode: "USD" },
    quantity: version,
    createdAt: timestampFromMs(Date.UTC(2026, 0, 1)),
    updatedAt: timestampFromMs(Date.UTC(2026, 0, 1) + version * 1000),
    version: BigInt(version),
  });
}

/** A claimed delivery answered 204 at once: what the recorder stores for a success. */
export function succeededAttempt(delivery: ClaimedDelivery): FinishedAttempt {
  return {
    delivery,
    attempt: {
      startedAt: new Date(),
      latencyMicros: 1_000n,
      status: 204,
      errorClass: "NONE",
      responseBody: "",
      retryAfterMs: undefined,
      errorMessage: undefined,
    },
    decision: { kind: "succeeded" },
  };
}

export function subscriptionEvent(options: EventOptions): SubscriptionEvent {
  const type = options.type ?? (options.version === 1 ? EventType.SUBSCRIPTION_CREATED : EventType.SUBSCRIPTION_UPDATED);
  return create(SubscriptionEventSchema, {
    id: options.id ?? newEventId(),
    type,
    merchantId: options.merchantId,
    subscriptionId: options.subscriptionId,
    version: BigInt(options.version),
    occurredAt: timestampFromMs(Date.now()),
    subscription: subscription(options.merchantId, options.subscriptionId, options.version),
    ...(type === EventType.SUBSCRIPTION_UPDATED
      ? {
          previous: subscription(options.merchantId, options.subscriptionId, options.version - 1),
          changedFields: create(FieldMaskSchema, { paths: ["status", "quantity", "updated_at", "version"] }),
        }
      : {}),
  });
}

// --- Events as the capture triggers record them -----------------------------------------------------

const EPOCH_MS = Date.UTC(2026, 0, 1);

/** A snapshot timestamp as the capture triggers write it (UTC, "+00:00"). */
function snapshotTime(ms: number): string {
  return new Date(ms).toISOString().replace("Z", "+00:00");
}

/** A made-up subscription at `version`, as subdata_subscription_snapshot stores it (the fields subscriptionEvent sets). */
function subscriptionSnapshot(merchantId: string, id: string, version: number): SubscriptionSnapshot {
  return {
    id,
    merchant_id: merchantId,
    customer_id: "cus_1",
    plan_id: "plan_1",
    status: version % 2 ? "ACTIVE" : "PAUSED",
    price_minor: "1999",
    currency: "USD",
    quantity: version,
    current_period_start: snapshotTime(EPOCH_MS),
    current_period_end: snapshotTime(EPOCH_MS + 31 * 86_400_000),
    next_charge_at: null,
    trial_ends_at: null,
    paused_at: null,
    cancelled_at: null,
    cancellation_reason: null,
    created_at: snapshotTime(EPOCH_MS),
    updated_at: snapshotTime(EPOCH_MS + version * 1000),
    version: String(version),
    customer: { id: "cus_1", email: "jane@example.com", name: "Jane" },
    plan: { id: "plan_1", name: "Coffee", interval: "MONTH", interval_count: 1 },
  };
}

/** A made-up charge at `version` (1: pending, later: succeeded), as subdata_charge_snapshot stores it. */
function chargeSnapshot(merchantId: string, id: string, version: number): ChargeSnapshot {
  return {
    id,
    merchant_id: merchantId,
    subscription_id: "sub_1",
    status: version === 1 ? "PENDING" : "SUCCEEDED",
    amount_minor: "1999",
    amount_refunded_minor: "0",
    currency: "USD",
    order_id: null,
    failure_code: null,
    failure_message: null,
    scheduled_at: snapshotTime(EPOCH_MS),
    processed_at: null,
    created_at: snapshotTime(EPOCH_MS),
    version: String(version),
  };
}

/** The payload of a change: created (version 1) without a previous state, updated with the keys that differed. */
function changePayload<S extends object>(object: S, previous: S | undefined) {
  if (!previous) return { object, previous: null, changed_columns: [] };
  const differing = Object.fromEntries(Object.entries(previous).filter(([key, value]) => JSON.stringify(value) !== JSON.stringify(object[key as keyof S])));
  return { object, previous: differing, changed_columns: Object.keys(differing) };
}

interface RecordedChange {
  id: string;
  merchantId: string;
  resourceType: ResourceType;
  resourceId: string;
  type: string;
  version: number;
  payload: object;
}

/**
 * Records change_events rows as the capture trigger would (no outbox rows: no relay runs here), in one
 * statement, and answers them as the relay reads them, in the order given. Ingest accepts only events
 * that match such a row.
 */
async function recordChanges(admin: Pool, changes: readonly RecordedChange[]): Promise<ChangeEventRow[]> {
  const { rows } = await admin.query<ChangeEventRow>(
    `INSERT INTO change_events (id, merchant_id, resource_type, resource_id, event_type, version, payload)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::jsonb[])
     RETURNING id, merchant_id, resource_type, resource_id, event_type, version, occurred_at, payload`,
    [
      changes.map((c) => c.id),
      changes.map((c) => c.merchantId),
      changes.map((c) => c.resourceType),
      changes.map((c) => c.resourceId),
      changes.map((c) => c.type),
      changes.map((c) => c.version),
      changes.map((c) => JSON.stringify(c.payload)),
    ],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return changes.map((c) => byId.get(c.id)!);
}

export async function createHarness(tag: string): Promise<Harness> {
  const runId = inject("runId");
  const stream = `${runId}_whd_${tag}`;
  const subjectPrefix = `${runId}.whd.${tag}`;
  const database = await createTestDatabase(`whd_${tag}`);
  const admin = createPool({ connectionString: database.adminUrl, applicationName: `test-whd-${tag}-admin` });
  const pool = createPool({ connectionString: database.roleUrls.webhook, applicationName: `test-whd-${tag}`, max: 6 });
  const nc = await connect({ servers: inject("natsUrl"), name: `test-whd-${tag}` });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`], storage: StorageType.Memory });
  const js = jetstream(nc);
  const secretKey = randomBytes(32).toString("base64");
  const secretBox = createSecretBox(secretKey);
  const logger = createLogger({ name: `test-whd-${tag}`, level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const pipelines: DeliveryPipeline[] = [];

  const settings = (overrides: Partial<DeliveryPipelineSettings> = {}): DeliveryPipelineSettings => ({
    allowPrivate: true,
    retrySchedule: [0, 100, 100],
    concurrency: 8,
    stream,
    subjectPrefix,
    consumerName: "webhook-deliveries",
    disableAfterMs: 5 * 86_400_000,
    requestTimeoutMs: 5_000,
    pollIntervalMs: 200,
    storeRetryMs: 500,
    // A killed leader's lease runs out in seconds, so a standby takes over within a test's patience.
    ingestLeaseMs: 3_000,
    ...overrides,
  });

  /** A subscription's change as the capture trigger records it. */
  const subscriptionChange = (options: EventOptions): RecordedChange => {
    const type = options.type ?? (options.version === 1 ? EventType.SUBSCRIPTION_CREATED : EventType.SUBSCRIPTION_UPDATED);
    const object = subscriptionSnapshot(options.merchantId, options.subscriptionId, options.version);
    const previous =
      type === EventType.SUBSCRIPTION_UPDATED ? subscriptionSnapshot(options.merchantId, options.subscriptionId, options.version - 1) : undefined;
    return {
      id: options.id ?? newEventId(),
      merchantId: options.merchantId,
      resourceType: "subscription",
      resourceId: options.subscriptionId,
      type: eventTypeName(type)!,
      version: options.version,
      payload: changePayload(object, previous),
    };
  };
  const recordAll = async (options: readonly EventOptions[]): Promise<SubscriptionEvent[]> => {
    const rows = await recordChanges(admin, options.map(subscriptionChange));
    return rows.map((row) => subscriptionEventFromChangeEvent(changeEventFromRow(row)));
  };
  const publishRecorded = async (event: SubscriptionEvent, traceparent?: string) => {
    const h = headers();
    if (traceparent !== undefined) h.set("traceparent", traceparent);
    await js.publish(`${subjectPrefix}.subscription.${event.merchantId}`, toBinary(SubscriptionEventSchema, event), { msgID: event.id, headers: h });
  };

  return {
    admin,
    pool,
    nc,
    secretBox,
    secretKey,
    stream,
    subjectPrefix,
    fixtures: createFixtures(admin),
    logger,
    webhookDatabaseUrl: database.roleUrls.webhook,
    queryDatabaseUrl: database.roleUrls.query,
    async createEndpoint(options) {
      const secret = options.secret ?? generateSigningSecret();
      const { rows } = await admin.query<{ id: string }>("SELECT subdata_new_id('we') AS id");
      const id = rows[0]!.id;
      await admin.query(
        `INSERT INTO webhook_endpoints (id, merchant_id, url, event_types, secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          id,
          options.merchantId,
          options.url,
          options.eventTypes ?? [],
          secretBox.seal(secret, id),
          options.previousSecret ? secretBox.seal(options.previousSecret, id) : null,
          options.previousExpiresAt ?? null,
        ],
      );
      return { id, secret };
    },
    async publish(options) {
      const [event] = await recordAll([options]);
      await publishRecorded(event!, options.traceparent);
      return event!;
    },
    async publishAll(options) {
      const events = await recordAll(options);
      await Promise.all(events.map((event, index) => publishRecorded(event, options[index]!.traceparent)));
      return events;
    },
    async record(options) {
      const [event] = await recordAll([options]);
      return event!;
    },
    async publishCharge(options) {
      const object = chargeSnapshot(options.merchantId, options.chargeId, options.version);
      const previous = options.version === 1 ? undefined : chargeSnapshot(options.merchantId, options.chargeId, options.version - 1);
      const [row] = await recordChanges(admin, [
        {
          id: newEventId(),
          merchantId: options.merchantId,
          resourceType: "charge",
          resourceId: options.chargeId,
          type: options.version === 1 ? "charge.created" : "charge.updated",
          version: options.version,
          payload: changePayload(object, previous),
        },
      ]);
      const event = changeEventFromRow(row!);
      await js.publish(`${subjectPrefix}.charge.${options.merchantId}`, toBinary(ChangeEventSchema, event), { msgID: event.id });
      return event;
    },
    async publishEvent(event, subjectMerchantId = event.merchantId) {
      await js.publish(`${subjectPrefix}.subscription.${subjectMerchantId}`, toBinary(SubscriptionEventSchema, event), {
        msgID: `${event.id}-${randomBytes(4).toString("hex")}`,
      });
    },
    async publishRaw(merchantId, data, id) {
      await js.publish(`${subjectPrefix}.subscription.${merchantId}`, data, { msgID: id });
    },
    settings,
    startPipeline(overrides) {
      const pipeline = createDeliveryPipeline({ pool, nats: nc, secretBox, config: settings(overrides), logger, tracing: createCapturedSpans().tracing });
      pipeline.start();
      pipelines.push(pipeline);
      return pipeline;
    },
    async close() {
      await Promise.allSettled(pipelines.map((pipeline) => pipeline.stop()));
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close();
      await pool.end();
      await admin.end();
      await database.drop();
    },
  };
}

export { waitFor } from "../../support/wait-for.ts";

export interface DeliveryState {
  id: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string;
  delivered_at: string | null;
}

export async function deliveryOf(admin: Pool, endpointId: string, eventId: string): Promise<DeliveryState | undefined> {
  const { rows } = await admin.query<DeliveryState>(
    "SELECT id, status, attempt_count, next_attempt_at, delivered_at FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2",
    [endpointId, eventId],
  );
  return rows[0];
}

export interface AttemptState {
  attempt_number: number;
  response_status: number | null;
  error_class: string;
  response_body: string;
  started_at: string;
  latency_micros: bigint;
}

export async function attemptsOf(admin: Pool, deliveryId: string): Promise<AttemptState[]> {
  const { rows } = await admin.query<AttemptState>(
    `SELECT attempt_number, response_status, error_class, response_body, started_at, latency_micros
       FROM webhook_attempts WHERE delivery_id = $1 ORDER BY started_at, id`,
    [deliveryId],
  );
  return rows;
}
