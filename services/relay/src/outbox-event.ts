import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { eventTypeOf } from "@subdata/events";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type SubscriptionEvent, SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import {
  PlanInterval,
  type Subscription,
  SubscriptionSchema,
  SubscriptionStatus,
} from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { pgTimestampToProto } from "@subdata/runtime";

/** A subscription as the capture trigger snapshots it (subdata_subscription_snapshot in SQL). */
export interface SubscriptionSnapshot {
  id: string;
  merchant_id: string;
  customer_id: string;
  plan_id: string;
  status: string;
  price_minor: string;
  currency: string;
  quantity: number;
  current_period_start: string;
  current_period_end: string;
  next_charge_at: string | null;
  trial_ends_at: string | null;
  paused_at: string | null;
  cancelled_at: string | null;
  cancellation_reason: string | null;
  created_at: string;
  updated_at: string;
  version: string;
  customer: { id: string; email: string; name: string } | null;
  plan: { id: string; name: string; interval: string; interval_count: number } | null;
}

export interface OutboxPayload {
  subscription: SubscriptionSnapshot;
  previous: SubscriptionSnapshot | null;
  changed_columns: string[];
}

/** One event_outbox row as the relay reads it (int8 as bigint, timestamptz as Postgres text). */
export interface OutboxRow {
  id: string;
  seq: bigint;
  merchant_id: string;
  subscription_id: string;
  event_type: string;
  version: bigint;
  occurred_at: string;
  payload: OutboxPayload;
  attempts: number;
}

// Columns that become another proto field; every other column maps to the field of the same name.
const columnToField: Record<string, string> = {
  price_minor: "price",
  currency: "price",
  customer_id: "customer",
  plan_id: "plan",
};

// version changes on every update by definition and travels as the event's own version, so listing it
// would only add noise to previous_attributes.
const notReportedAsChanged = new Set(["version"]);

/**
 * The proto field names (snake_case) of Subscription that a change touched, in field-number order;
 * columns the proto does not carry are left out.
 */
export function changedFieldPaths(columns: readonly string[]): string[] {
  const names = new Set(columns.filter((column) => !notReportedAsChanged.has(column)).map((column) => columnToField[column] ?? column));
  return SubscriptionSchema.fields.filter((field) => names.has(field.name)).map((field) => field.name);
}

/** The JSON snapshot's timestamps look like "2026-11-22T00:22:27.864363+00:00" (UTC, pinned in SQL). */
function snapshotTimestamp(text: string): Timestamp {
  return pgTimestampToProto(text.replace("T", " ").replace(/\+00:00$/, "+00"));
}

function optionalTimestamp(text: string | null): Timestamp | undefined {
  return text === null ? undefined : snapshotTimestamp(text);
}

function enumValue<E extends Record<string, string | number>>(values: E, name: string, what: string): E[keyof E] {
  const value = values[name];
  if (typeof value !== "number" || value === 0) throw new Error(`unknown ${what} ${JSON.stringify(name)}`);
  return value as E[keyof E];
}

function snapshotToSubscription(snapshot: SubscriptionSnapshot): Subscription {
  return create(SubscriptionSchema, {
    id: snapshot.id,
    merchantId: snapshot.merchant_id,
    status: enumValue(SubscriptionStatus, snapshot.status, "subscription status"),
    // Joined by the trigger; only null if the row's foreign key was violated, which cannot commit.
    customer: snapshot.customer ?? { id: snapshot.customer_id },
    plan: snapshot.plan
      ? {
          id: snapshot.plan.id,
          name: snapshot.plan.name,
          interval: enumValue(PlanInterval, snapshot.plan.interval, "plan interval"),
          intervalCount: snapshot.plan.interval_count,
        }
      : { id: snapshot.plan_id },
    price: { amountMinor: BigInt(snapshot.price_minor), currencyCode: snapshot.currency },
    quantity: snapshot.quantity,
    currentPeriodStart: snapshotTimestamp(snapshot.current_period_start),
    currentPeriodEnd: snapshotTimestamp(snapshot.current_period_end),
    nextChargeAt: optionalTimestamp(snapshot.next_charge_at),
    trialEndsAt: optionalTimestamp(snapshot.trial_ends_at),
    pausedAt: optionalTimestamp(snapshot.paused_at),
    cancelledAt: optionalTimestamp(snapshot.cancelled_at),
    cancellationReason: snapshot.cancellation_reason ?? undefined,
    createdAt: snapshotTimestamp(snapshot.created_at),
    updatedAt: snapshotTimestamp(snapshot.updated_at),
    version: BigInt(snapshot.version),
  });
}

/** The message the relay publishes for an outbox row. Throws on a row it cannot represent. */
export function outboxRowToEvent(row: OutboxRow): SubscriptionEvent {
  const type = eventTypeOf(row.event_type);
  if (type === undefined) throw new Error(`unknown event type ${JSON.stringify(row.event_type)}`);
  const { subscription, previous, changed_columns: changedColumns } = row.payload;
  return create(SubscriptionEventSchema, {
    id: row.id,
    type,
    merchantId: row.merchant_id,
    subscriptionId: row.subscription_id,
    version: row.version,
    occurredAt: pgTimestampToProto(row.occurred_at),
    subscription: snapshotToSubscription(subscription),
    previous: previous ? snapshotToSubscription(previous) : undefined,
    changedFields: type === EventType.SUBSCRIPTION_UPDATED ? create(FieldMaskSchema, { paths: changedFieldPaths(changedColumns) }) : undefined,
  });
}
