import type { Currency } from "./catalog.ts";
import type { PlanInterval } from "./time.ts";

/**
 * The rows the generator makes, one interface per table, in the table's column order. Timestamps are
 * integers of microseconds since the epoch (see time.ts); money is integer minor units.
 */

export const SUBSCRIPTION_STATUSES = ["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const CHARGE_STATUSES = ["PENDING", "SUCCEEDED", "FAILED", "SKIPPED", "REFUNDED", "PARTIALLY_REFUNDED"] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

export const ORDER_STATUSES = ["PAID", "FULFILLED", "CANCELLED", "REFUNDED"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export interface PlanRow {
  id: string;
  merchantId: string;
  name: string;
  interval: PlanInterval;
  intervalCount: number;
  priceMinor: number;
  currency: Currency;
  createdAt: number;
}

export interface CustomerRow {
  id: string;
  merchantId: string;
  email: string;
  name: string;
  createdAt: number;
}

export interface SubscriptionRow {
  id: string;
  merchantId: string;
  customerId: string;
  planId: string;
  status: SubscriptionStatus;
  priceMinor: number;
  currency: Currency;
  quantity: number;
  currentPeriodStart: number;
  currentPeriodEnd: number;
  nextChargeAt: number | null;
  trialEndsAt: number | null;
  pausedAt: number | null;
  cancelledAt: number | null;
  cancellationReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface ChargeRow {
  id: string;
  merchantId: string;
  subscriptionId: string;
  status: ChargeStatus;
  amountMinor: number;
  amountRefundedMinor: number;
  currency: Currency;
  orderId: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  scheduledAt: number;
  processedAt: number | null;
  createdAt: number;
}

export interface OrderRow {
  id: string;
  merchantId: string;
  subscriptionId: string;
  chargeId: string;
  number: number;
  status: OrderStatus;
  currency: Currency;
  subtotalMinor: number;
  discountMinor: number;
  shippingMinor: number;
  taxMinor: number;
  totalMinor: number;
  createdAt: number;
  updatedAt: number;
}

export interface LineItemRow {
  orderId: string;
  position: number;
  merchantId: string;
  sku: string;
  title: string;
  quantity: number;
  unitPriceMinor: number;
  totalMinor: number;
}

/** One batch: self-contained (its subscriptions reference only its own customers and the run's plans). */
export interface SeedBatch {
  customers: CustomerRow[];
  subscriptions: SubscriptionRow[];
  charges: ChargeRow[];
  orders: OrderRow[];
  lineItems: LineItemRow[];
}
