import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { describe, expect, it } from "vitest";
import { outboxRowToEvent } from "./outbox-event.ts";
import { outboxRow as row, SNAPSHOT as snapshot } from "./test-support/outbox-rows.ts";

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
    const changed = outboxRowToEvent(
      row({
        event_type: "subscription.updated",
        version: 2n,
        payload: { subscription: snapshot, previous: snapshot, changed_columns: ["cancelled_at", "currency", "plan_id", "price_minor", "status", "updated_at", "version"] },
      }),
    );
    expect(changed.changedFields?.paths).toEqual([
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
