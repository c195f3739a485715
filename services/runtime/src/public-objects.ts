import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { type LineItem, type Order, OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { type Charge, ChargeStatus, PlanInterval, type Subscription, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { type PublicMoney, renderMoney } from "./money.ts";
import { timestampToRfc3339Millis } from "./time.ts";

/**
 * The public JSON objects of contract section 2, rendered from the internal protobuf messages. The
 * gateway serves them and the webhook service sends them in event bodies, so both render the same way.
 * Every field is always present (null when unset); times are RFC 3339 UTC with milliseconds; money
 * always carries its currency.
 */

export interface PublicSubscription {
  id: string;
  object: "subscription";
  status: string;
  customer: { id: string; email: string; name: string };
  plan: { id: string; name: string; interval: string; interval_count: number };
  price: PublicMoney;
  quantity: number;
  current_period_start: string | null;
  current_period_end: string | null;
  next_charge_at: string | null;
  trial_ends_at: string | null;
  paused_at: string | null;
  cancelled_at: string | null;
  cancellation_reason: string | null;
  created_at: string | null;
  updated_at: string | null;
  version: number;
}

export interface PublicCharge {
  id: string;
  object: "charge";
  subscription_id: string;
  status: string;
  amount: PublicMoney;
  amount_refunded: PublicMoney;
  order_id: string | null;
  failure_code: string | null;
  failure_message: string | null;
  scheduled_at: string | null;
  processed_at: string | null;
  created_at: string | null;
  version: number;
}

export interface PublicLineItem {
  sku: string;
  title: string;
  quantity: number;
  unit_price: PublicMoney;
  total: PublicMoney;
}

export interface PublicOrder {
  id: string;
  object: "order";
  subscription_id: string;
  charge_id: string | null;
  number: number;
  status: string;
  subtotal: PublicMoney;
  discount: PublicMoney;
  shipping: PublicMoney;
  tax: PublicMoney;
  total: PublicMoney;
  line_items: PublicLineItem[];
  created_at: string | null;
  updated_at: string | null;
  version: number;
}

function time(timestamp: Timestamp | undefined): string | null {
  return timestamp ? timestampToRfc3339Millis(timestamp) : null;
}

/** An enum value's public name ("ACTIVE"); UNSPECIFIED or unknown values are bugs upstream. */
function enumName(names: Record<number, string>, value: number, what: string): string {
  const name = names[value];
  if (!name || value === 0) throw new Error(`${what} is unspecified or unknown: ${value}`);
  return name;
}

function subscriptionStatusName(status: SubscriptionStatus): string {
  return enumName(SubscriptionStatus, status, "subscription status");
}

export function renderSubscription(subscription: Subscription): PublicSubscription {
  const customer = subscription.customer;
  const plan = subscription.plan;
  return {
    id: subscription.id,
    object: "subscription",
    status: subscriptionStatusName(subscription.status),
    customer: { id: customer?.id ?? "", email: customer?.email ?? "", name: customer?.name ?? "" },
    plan: {
      id: plan?.id ?? "",
      name: plan?.name ?? "",
      interval: enumName(PlanInterval, plan?.interval ?? 0, "plan interval"),
      interval_count: plan?.intervalCount ?? 0,
    },
    price: renderMoney(subscription.price),
    quantity: subscription.quantity,
    current_period_start: time(subscription.currentPeriodStart),
    current_period_end: time(subscription.currentPeriodEnd),
    next_charge_at: time(subscription.nextChargeAt),
    trial_ends_at: time(subscription.trialEndsAt),
    paused_at: time(subscription.pausedAt),
    cancelled_at: time(subscription.cancelledAt),
    cancellation_reason: subscription.cancellationReason ?? null,
    created_at: time(subscription.createdAt),
    updated_at: time(subscription.updatedAt),
    version: Number(subscription.version),
  };
}

export function renderCharge(charge: Charge): PublicCharge {
  return {
    id: charge.id,
    object: "charge",
    subscription_id: charge.subscriptionId,
    status: enumName(ChargeStatus, charge.status, "charge status"),
    amount: renderMoney(charge.amount),
    amount_refunded: renderMoney(charge.amountRefunded),
    order_id: charge.orderId ?? null,
    failure_code: charge.failureCode ?? null,
    failure_message: charge.failureMessage ?? null,
    scheduled_at: time(charge.scheduledAt),
    processed_at: time(charge.processedAt),
    created_at: time(charge.createdAt),
    version: Number(charge.version),
  };
}

function renderLineItem(item: LineItem): PublicLineItem {
  return {
    sku: item.sku,
    title: item.title,
    quantity: item.quantity,
    unit_price: renderMoney(item.unitPrice),
    total: renderMoney(item.total),
  };
}

export function renderOrder(order: Order): PublicOrder {
  return {
    id: order.id,
    object: "order",
    subscription_id: order.subscriptionId,
    charge_id: order.chargeId ?? null,
    number: Number(order.number),
    status: enumName(OrderStatus, order.status, "order status"),
    subtotal: renderMoney(order.subtotal),
    discount: renderMoney(order.discount),
    shipping: renderMoney(order.shipping),
    tax: renderMoney(order.tax),
    total: renderMoney(order.total),
    line_items: order.lineItems.map(renderLineItem),
    created_at: time(order.createdAt),
    updated_at: time(order.updatedAt),
    version: Number(order.version),
  };
}

// Proto fields with no public attribute.
const PRIVATE_FIELDS = new Set(["merchant_id"]);

/**
 * The public attributes named by `changedFields` (proto field paths of the resource, which are the
 * public attribute names by design: "status", "price", "customer"…), taken from the rendered previous
 * object: webhooks and the change feed send them as `previous_attributes`.
 */
export function previousAttributes(renderedPrevious: object, changedFields: readonly string[]): Record<string, unknown> {
  const rendered = renderedPrevious as Record<string, unknown>;
  const attributes: Record<string, unknown> = {};
  for (const path of changedFields) {
    const top = path.split(".")[0] ?? path;
    if (PRIVATE_FIELDS.has(top) || !(top in rendered)) continue;
    attributes[top] = rendered[top];
  }
  return attributes;
}
