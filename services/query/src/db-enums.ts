import { OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { ChargeStatus, PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";

// The database enums (text labels) and the proto enums, side by side, in one place. A label the code
// does not know is a schema change the code missed: it throws, and the RPC answers INTERNAL.

const subscriptionStatuses: Readonly<Record<string, SubscriptionStatus>> = {
  ACTIVE: SubscriptionStatus.ACTIVE,
  TRIALING: SubscriptionStatus.TRIALING,
  PAST_DUE: SubscriptionStatus.PAST_DUE,
  PAUSED: SubscriptionStatus.PAUSED,
  CANCELLED: SubscriptionStatus.CANCELLED,
  EXPIRED: SubscriptionStatus.EXPIRED,
};

const planIntervals: Readonly<Record<string, PlanInterval>> = {
  DAY: PlanInterval.DAY,
  WEEK: PlanInterval.WEEK,
  MONTH: PlanInterval.MONTH,
  YEAR: PlanInterval.YEAR,
};

const chargeStatuses: Readonly<Record<string, ChargeStatus>> = {
  PENDING: ChargeStatus.PENDING,
  SUCCEEDED: ChargeStatus.SUCCEEDED,
  FAILED: ChargeStatus.FAILED,
  SKIPPED: ChargeStatus.SKIPPED,
  REFUNDED: ChargeStatus.REFUNDED,
  PARTIALLY_REFUNDED: ChargeStatus.PARTIALLY_REFUNDED,
};

const orderStatuses: Readonly<Record<string, OrderStatus>> = {
  PAID: OrderStatus.PAID,
  FULFILLED: OrderStatus.FULFILLED,
  CANCELLED: OrderStatus.CANCELLED,
  REFUNDED: OrderStatus.REFUNDED,
};

/** The database labels of each enum, for tests that compare them with enum_range() in Postgres. */
export const databaseEnumLabels = {
  subscription_status: Object.keys(subscriptionStatuses),
  plan_interval: Object.keys(planIntervals),
  charge_status: Object.keys(chargeStatuses),
  order_status: Object.keys(orderStatuses),
} as const;

function lookup<T>(table: Readonly<Record<string, T>>, type: string, label: string): T {
  const value = Object.hasOwn(table, label) ? table[label] : undefined;
  if (value === undefined) throw new Error(`unknown ${type} label ${JSON.stringify(label)}`);
  return value;
}

export const subscriptionStatusFromDb = (label: string) => lookup(subscriptionStatuses, "subscription_status", label);
export const planIntervalFromDb = (label: string) => lookup(planIntervals, "plan_interval", label);
export const chargeStatusFromDb = (label: string) => lookup(chargeStatuses, "charge_status", label);
export const orderStatusFromDb = (label: string) => lookup(orderStatuses, "order_status", label);

const subscriptionStatusLabels = new Map(Object.entries(subscriptionStatuses).map(([label, status]) => [status, label]));

/**
 * The database label for a status filter: null for UNSPECIFIED (all statuses), undefined for a number
 * that is not a defined value (proto3 enums are open, so a client can send one).
 */
export function subscriptionStatusToDb(status: SubscriptionStatus): string | null | undefined {
  if (status === SubscriptionStatus.UNSPECIFIED) return null;
  return subscriptionStatusLabels.get(status);
}
