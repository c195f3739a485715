import { create, type DescMessage } from "@bufbuild/protobuf";
import { FieldMaskSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { type ChangeEvent, ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import type { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type Order, OrderSchema, OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import {
  type Charge,
  ChargeSchema,
  ChargeStatus,
  PlanInterval,
  type Subscription,
  SubscriptionSchema,
  SubscriptionStatus,
} from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import {
  pgJsonTimestampToProto,
  pgTimestampToProto,
  previousAttributes,
  renderCharge,
  renderOrder,
  renderSubscription,
  timestampToRfc3339Millis,
} from "@subdata/runtime";
import { eventTypeName, eventTypeOf } from "./event-types.ts";

/**
 * The events of the change feed and of webhooks: the snapshots the capture triggers store
 * (change_events.payload), the ChangeEvent message made from them, and the public body. The relay, the
 * webhook service and the feed all use these, so a webhook and a feed item for the same event are the
 * same bytes.
 */

/** The enum value of a public name; throws for a name that is not one (a poison row). */
function requireEventType(name: string): EventType {
  const type = eventTypeOf(name);
  if (type === undefined) throw new Error(`unknown event type ${JSON.stringify(name)}`);
  return type;
}

// --- Snapshots: rows as the capture triggers store them (UTC timestamps, bigints as strings) -------

/** subdata_subscription_snapshot in SQL. */
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

/** subdata_charge_snapshot in SQL. */
export interface ChargeSnapshot {
  id: string;
  merchant_id: string;
  subscription_id: string;
  status: string;
  amount_minor: string;
  amount_refunded_minor: string;
  currency: string;
  order_id: string | null;
  failure_code: string | null;
  failure_message: string | null;
  scheduled_at: string;
  processed_at: string | null;
  created_at: string;
  version: string;
}

/** subdata_order_snapshot in SQL: the order with its line items. */
export interface OrderSnapshot {
  id: string;
  merchant_id: string;
  subscription_id: string;
  charge_id: string | null;
  number: string;
  status: string;
  currency: string;
  subtotal_minor: string;
  discount_minor: string;
  shipping_minor: string;
  tax_minor: string;
  total_minor: string;
  created_at: string;
  updated_at: string;
  version: string;
  line_items: { position: number; sku: string; title: string; quantity: number; unit_price_minor: string; total_minor: string }[];
}

/** The resources whose changes are events; the first token of an event type and of its subject's kind. */
export const resourceTypes = ["subscription", "charge", "order"] as const;
export type ResourceType = (typeof resourceTypes)[number];

/** change_events.payload. */
export interface ChangePayload<Snapshot> {
  object: Snapshot;
  /** Updates: the snapshot's keys whose value was different before; the previous state is object overlaid with them. */
  previous: Partial<Snapshot> | null;
  changed_columns: string[];
}

/** The whole previous snapshot of an update: the object with the keys that differed put back. */
function previousSnapshot<Snapshot>(payload: ChangePayload<Snapshot>): Snapshot | null {
  return payload.previous ? { ...payload.object, ...payload.previous } : null;
}

/** One change_events row as the readers select it (int8 as bigint, timestamptz as Postgres text). */
export interface ChangeEventRow {
  id: string;
  merchant_id: string;
  resource_type: ResourceType;
  resource_id: string;
  event_type: string;
  version: bigint;
  occurred_at: string;
  payload: ChangePayload<SubscriptionSnapshot> | ChangePayload<ChargeSnapshot> | ChangePayload<OrderSnapshot>;
}

/** The JSON snapshot's timestamps look like "2026-11-22T00:22:27.864363+00:00" (UTC, pinned in SQL). */
function snapshotTimestamp(text: string): Timestamp {
  return pgJsonTimestampToProto(text);
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

function snapshotToCharge(snapshot: ChargeSnapshot): Charge {
  const money = (minor: string) => ({ amountMinor: BigInt(minor), currencyCode: snapshot.currency });
  return create(ChargeSchema, {
    id: snapshot.id,
    subscriptionId: snapshot.subscription_id,
    status: enumValue(ChargeStatus, snapshot.status, "charge status"),
    amount: money(snapshot.amount_minor),
    amountRefunded: money(snapshot.amount_refunded_minor),
    orderId: snapshot.order_id ?? undefined,
    failureCode: snapshot.failure_code ?? undefined,
    failureMessage: snapshot.failure_message ?? undefined,
    scheduledAt: snapshotTimestamp(snapshot.scheduled_at),
    processedAt: optionalTimestamp(snapshot.processed_at),
    createdAt: snapshotTimestamp(snapshot.created_at),
    version: BigInt(snapshot.version),
  });
}

function snapshotToOrder(snapshot: OrderSnapshot): Order {
  const money = (minor: string) => ({ amountMinor: BigInt(minor), currencyCode: snapshot.currency });
  return create(OrderSchema, {
    id: snapshot.id,
    merchantId: snapshot.merchant_id,
    subscriptionId: snapshot.subscription_id,
    chargeId: snapshot.charge_id ?? undefined,
    number: BigInt(snapshot.number),
    status: enumValue(OrderStatus, snapshot.status, "order status"),
    subtotal: money(snapshot.subtotal_minor),
    discount: money(snapshot.discount_minor),
    shipping: money(snapshot.shipping_minor),
    tax: money(snapshot.tax_minor),
    total: money(snapshot.total_minor),
    lineItems: snapshot.line_items.map((item) => ({
      sku: item.sku,
      title: item.title,
      quantity: item.quantity,
      unitPrice: money(item.unit_price_minor),
      total: money(item.total_minor),
    })),
    createdAt: snapshotTimestamp(snapshot.created_at),
    updatedAt: snapshotTimestamp(snapshot.updated_at),
    version: BigInt(snapshot.version),
  });
}

// Columns that render as another proto field; every other column maps to the field of its name.
// version changes on every update by definition and travels as the event's own version, so listing it
// would only add noise to previous_attributes.
const COLUMN_FIELDS: Record<ResourceType, { schema: DescMessage; columns: Record<string, readonly string[]> }> = {
  subscription: {
    schema: SubscriptionSchema,
    columns: { price_minor: ["price"], currency: ["price"], customer_id: ["customer"], plan_id: ["plan"], version: [] },
  },
  charge: {
    schema: ChargeSchema,
    columns: {
      amount_minor: ["amount"],
      amount_refunded_minor: ["amount_refunded"],
      currency: ["amount", "amount_refunded"],
      version: [],
    },
  },
  order: {
    schema: OrderSchema,
    columns: {
      subtotal_minor: ["subtotal"],
      discount_minor: ["discount"],
      shipping_minor: ["shipping"],
      tax_minor: ["tax"],
      total_minor: ["total"],
      currency: ["subtotal", "discount", "shipping", "tax", "total", "line_items"],
      version: [],
    },
  },
};

/**
 * The proto field names (snake_case) of the resource that a change touched, in field-number order;
 * columns the proto does not carry are left out.
 */
function changedFieldPaths(resource: ResourceType, columns: readonly string[]): string[] {
  const { schema, columns: mapping } = COLUMN_FIELDS[resource];
  const names = new Set(columns.flatMap((column) => mapping[column] ?? [column]));
  return schema.fields.filter((field) => names.has(field.name)).map((field) => field.name);
}

/** The ChangeEvent of a change_events row. Throws on a row it cannot represent. */
export function changeEventFromRow(row: ChangeEventRow): ChangeEvent {
  const type = requireEventType(row.event_type);
  const isUpdate = row.event_type.endsWith(".updated");
  const changedFields = isUpdate ? create(FieldMaskSchema, { paths: changedFieldPaths(row.resource_type, row.payload.changed_columns) }) : undefined;
  const common = {
    id: row.id,
    type,
    merchantId: row.merchant_id,
    resourceId: row.resource_id,
    version: row.version,
    occurredAt: pgTimestampToProto(row.occurred_at),
    changedFields,
  };
  switch (row.resource_type) {
    case "subscription": {
      const payload = row.payload as ChangePayload<SubscriptionSnapshot>;
      return create(ChangeEventSchema, {
        ...common,
        object: { case: "subscription", value: snapshotToSubscription(payload.object) },
        previous:
          isUpdate && payload.previous ? { case: "previousSubscription", value: snapshotToSubscription(previousSnapshot(payload)!) } : { case: undefined },
      });
    }
    case "charge": {
      const payload = row.payload as ChangePayload<ChargeSnapshot>;
      return create(ChangeEventSchema, {
        ...common,
        object: { case: "charge", value: snapshotToCharge(payload.object) },
        previous: isUpdate && payload.previous ? { case: "previousCharge", value: snapshotToCharge(previousSnapshot(payload)!) } : { case: undefined },
      });
    }
    case "order": {
      const payload = row.payload as ChangePayload<OrderSnapshot>;
      return create(ChangeEventSchema, {
        ...common,
        object: { case: "order", value: snapshotToOrder(payload.object) },
        previous: isUpdate && payload.previous ? { case: "previousOrder", value: snapshotToOrder(previousSnapshot(payload)!) } : { case: undefined },
      });
    }
    default:
      throw new Error(`unknown resource type ${JSON.stringify(row.resource_type)}`);
  }
}

/** The public object of an event and of its previous state, rendered as the REST API renders them. */
function renderedObjects(event: ChangeEvent): { object: object; previous: object | undefined } {
  switch (event.object.case) {
    case "subscription":
      return {
        object: renderSubscription(event.object.value),
        previous: event.previous.case === "previousSubscription" ? renderSubscription(event.previous.value) : undefined,
      };
    case "charge":
      return {
        object: renderCharge(event.object.value),
        previous: event.previous.case === "previousCharge" ? renderCharge(event.previous.value) : undefined,
      };
    case "order":
      return {
        object: renderOrder(event.object.value),
        previous: event.previous.case === "previousOrder" ? renderOrder(event.previous.value) : undefined,
      };
    default:
      throw new Error(`event ${event.id} has no object`);
  }
}

/**
 * The Standard Webhooks payload of an event: {"id","type","timestamp","data":{"object",
 * "previous_attributes"}}. Webhooks send exactly these bytes, and the change feed serves them as its
 * items. Throws when the event is malformed (missing id, object or time, unknown enum values).
 */
export function renderEventBody(event: ChangeEvent): string {
  if (!event.id || !event.merchantId || !event.resourceId) throw new Error("event lacks id, merchant_id or resource_id");
  if (!event.occurredAt) throw new Error(`event ${event.id} has no occurred_at`);
  const type = eventTypeName(event.type);
  if (type === undefined) throw new Error(`event ${event.id} has an unspecified or unknown type: ${event.type}`);
  const { object, previous } = renderedObjects(event);
  const isUpdate = type.endsWith(".updated");
  return JSON.stringify({
    id: event.id,
    type,
    timestamp: timestampToRfc3339Millis(event.occurredAt),
    data: {
      object,
      previous_attributes: isUpdate && previous ? previousAttributes(previous, event.changedFields?.paths ?? []) : {},
    },
  });
}
