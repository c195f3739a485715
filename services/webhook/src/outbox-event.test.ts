import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { describe, expect, it } from "vitest";
import { changedFieldPaths, type OutboxRow, outboxRowToEvent, type SubscriptionSnapshot } from "./outbox-event.ts";

const snapshot: SubscriptionSnapshot = {
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

function row(overrides: Partial<OutboxRow>): OutboxRow {
  return {
    id: "evt_1",
    seq: 1n,
    merchant_id: "mer_1",
    subscription_id: "sub_1",
    event_type: "subscription.created",
    version: 1n,
    occurred_at: "2026-11-22 00:22:27.864400+00",
    payload: { subscription: snapshot, previous: null, changed_columns: [] },
    attempts: 0,
    ...overrides,
  };
}

describe("outbox rows as SubscriptionEvents", () => {
  it("carries a created subscription with customer, plan, exact money and microsecond timestamps", () => {
    const event = outboxRowToEvent(row({}));
    expect(event.type).toBe(EventType.SUBSCRIPTION_CREATED);
    expect(event.subscription?.status).toBe(SubscriptionStatus.ACTIVE);
    expect(event.subscription?.price).toMatchObject({ amountMinor: 9007199254740993n, currencyCode: "USD" });
    expect(event.subscription?.plan).toMatchObject({ interval: PlanInterval.MONTH, intervalCount: 3 });
    expect(event.subscription?.customer?.email).toBe("a@example.com");
    expect(event.subscription?.currentPeriodStart?.nanos).toBe(864_363_000);
    expect(event.subscription?.createdAt?.nanos).toBe(1_000);
    expect(event.occurredAt?.nanos).toBe(864_400_000);
    expect(event.subscription?.cancellationReason).toBeUndefined();
    expect(event.previous).toBeUndefined();
    expect(event.changedFields).toBeUndefined();
  });

  it("maps changed columns to Subscription field names and leaves version out", () => {
    expect(changedFieldPaths(["cancelled_at", "currency", "plan_id", "price_minor", "status", "updated_at", "version"])).toEqual([
      "status",
      "plan",
      "price",
      "cancelled_at",
      "updated_at",
    ]);
  });

  it("carries the previous subscription and the changed fields of an update", () => {
    const after = { ...snapshot, status: "CANCELLED", cancelled_at: "2026-11-23T00:00:00+00:00", cancellation_reason: "moved", version: "2" };
    const event = outboxRowToEvent(
      row({
        event_type: "subscription.updated",
        version: 2n,
        payload: { subscription: after, previous: snapshot, changed_columns: ["cancellation_reason", "cancelled_at", "status", "version"] },
      }),
    );
    expect(event.type).toBe(EventType.SUBSCRIPTION_UPDATED);
    expect(event.subscription?.cancellationReason).toBe("moved");
    expect(event.previous?.status).toBe(SubscriptionStatus.ACTIVE);
    expect(event.changedFields?.paths).toEqual(["status", "cancelled_at", "cancellation_reason"]);
  });

  it("refuses a row it cannot represent rather than publishing something wrong", () => {
    expect(() => outboxRowToEvent(row({ event_type: "subscription.exploded" }))).toThrow(/unknown event type/);
    expect(() => outboxRowToEvent(row({ payload: { subscription: { ...snapshot, status: "ZOMBIE" }, previous: null, changed_columns: [] } }))).toThrow(
      /unknown subscription status/,
    );
  });
});
