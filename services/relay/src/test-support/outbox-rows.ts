import type { ChargeSnapshot, SubscriptionSnapshot } from "@subdata/events";
import type { OutboxRow } from "../outbox-event.ts";

/** A subscription as the capture trigger snapshots it, with a bigint-sized price (tests of the relay side). */
export const SNAPSHOT: SubscriptionSnapshot = {
  id: "sub_1",
  merchant_id: "mer_1",
  customer_id: "cus_1",
  plan_id: "plan_1",
  status: "ACTIVE",
  price_minor: "9007199254740993",
  currency: "USD",
  quantity: 2,
  current_period_start: "2026-11-22T00:22:27.864363+00:00",
  current_period_end: "2026-12-22T00:22:27+00:00",
  next_charge_at: null,
  trial_ends_at: null,
  paused_at: null,
  cancelled_at: null,
  cancellation_reason: null,
  created_at: "2026-11-22T00:22:27.000001+00:00",
  updated_at: "2026-11-22T00:22:27.000001+00:00",
  version: "1",
  customer: { id: "cus_1", email: "a@example.com", name: "A" },
  plan: { id: "plan_1", name: "Box", interval: "MONTH", interval_count: 3 },
};

/** A charge as the capture trigger snapshots it. */
export const CHARGE_SNAPSHOT: ChargeSnapshot = {
  id: "ch_1",
  merchant_id: "mer_1",
  subscription_id: "sub_1",
  status: "SUCCEEDED",
  amount_minor: "1999",
  amount_refunded_minor: "0",
  currency: "USD",
  order_id: null,
  failure_code: null,
  failure_message: null,
  scheduled_at: "2026-11-22T00:22:27+00:00",
  processed_at: "2026-11-22T00:22:28.5+00:00",
  created_at: "2026-11-22T00:22:27+00:00",
  version: "1",
};

/** A claimed outbox row with its event as the relay reads it: a created subscription (SNAPSHOT) unless overridden. */
export function outboxRow(overrides: Partial<OutboxRow> = {}): OutboxRow {
  return {
    id: "evt_1",
    seq: 1n,
    merchant_id: "mer_1",
    resource_type: "subscription",
    resource_id: "sub_1",
    event_type: "subscription.created",
    version: 1n,
    occurred_at: "2026-11-22 00:22:27.864400+00",
    payload: { object: SNAPSHOT, previous: null, changed_columns: [] },
    attempts: 0,
    ...overrides,
  };
}
