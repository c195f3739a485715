import { fromBinary } from "@bufbuild/protobuf";
import { ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { ChargeStatus, PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { describe, expect, it } from "vitest";
import { outboxMessage } from "./outbox-event.ts";
import { CHARGE_SNAPSHOT, outboxRow as row, SNAPSHOT as snapshot } from "./test-support/outbox-rows.ts";

const subscriptionEventOf = (data: Uint8Array) => fromBinary(SubscriptionEventSchema, data);

describe("the message the relay publishes for an outbox row", () => {
  it("carries a created subscription with customer, plan, exact money and microsecond timestamps as a SubscriptionEvent", () => {
    const event = subscriptionEventOf(outboxMessage(row({})));
    expect(event.type).toBe(EventType.SUBSCRIPTION_CREATED);
    expect(event.subscriptionId).toBe("sub_1");
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
    const changed = subscriptionEventOf(
      outboxMessage(
        row({
          event_type: "subscription.updated",
          version: 2n,
          payload: {
            object: snapshot,
            previous: { status: "PAUSED" },
            changed_columns: ["cancelled_at", "currency", "plan_id", "price_minor", "status", "updated_at", "version"],
          },
        }),
      ),
    );
    expect(changed.changedFields?.paths).toEqual(["status", "plan", "price", "cancelled_at", "updated_at"]);
  });

  it("carries the previous subscription (the object with the keys that differed put back) and the changed fields of an update", () => {
    const after = { ...snapshot, status: "CANCELLED", cancelled_at: "2026-11-23T00:00:00+00:00", cancellation_reason: "moved", version: "2" };
    const event = subscriptionEventOf(
      outboxMessage(
        row({
          event_type: "subscription.updated",
          version: 2n,
          payload: {
            object: after,
            previous: { status: "ACTIVE", cancelled_at: null, cancellation_reason: null, version: "1" },
            changed_columns: ["cancellation_reason", "cancelled_at", "status", "version"],
          },
        }),
      ),
    );
    expect(event.type).toBe(EventType.SUBSCRIPTION_UPDATED);
    expect(event.subscription?.cancellationReason).toBe("moved");
    expect(event.previous).toMatchObject({ status: SubscriptionStatus.ACTIVE, version: 1n, quantity: 2 });
    expect(event.previous?.cancellationReason).toBeUndefined();
    expect(event.changedFields?.paths).toEqual(["status", "cancelled_at", "cancellation_reason"]);
  });

  it("publishes a charge as a ChangeEvent carrying the charge", () => {
    const data = outboxMessage(
      row({
        id: "evt_2",
        resource_type: "charge",
        resource_id: "ch_1",
        event_type: "charge.updated",
        version: 2n,
        payload: {
          object: { ...CHARGE_SNAPSHOT, amount_refunded_minor: "500", version: "2" },
          previous: { amount_refunded_minor: "0", version: "1" },
          changed_columns: ["amount_refunded_minor", "version"],
        },
      }),
    );
    const event = fromBinary(ChangeEventSchema, data);
    expect(event).toMatchObject({ id: "evt_2", type: EventType.CHARGE_UPDATED, merchantId: "mer_1", resourceId: "ch_1", version: 2n });
    expect(event.object).toMatchObject({ case: "charge", value: { status: ChargeStatus.SUCCEEDED, amountRefunded: { amountMinor: 500n } } });
    expect(event.previous).toMatchObject({ case: "previousCharge", value: { amountRefunded: { amountMinor: 0n }, version: 1n } });
    expect(event.changedFields?.paths).toEqual(["amount_refunded"]);
  });

  it("refuses a row it cannot represent rather than publishing something wrong", () => {
    expect(() => outboxMessage(row({ event_type: "subscription.exploded" }))).toThrow(/unknown event type/);
    expect(() => outboxMessage(row({ payload: { object: { ...snapshot, status: "ZOMBIE" }, previous: null, changed_columns: [] } }))).toThrow(
      /unknown subscription status/,
    );
  });
});
