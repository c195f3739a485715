import { create, equals } from "@bufbuild/protobuf";
import { FieldMaskSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { PlanInterval, SubscriptionSchema, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { describe, expect, it } from "vitest";
import { changeEventFromSubscriptionEvent, subscriptionEventFromChangeEvent } from "./subscription-events.ts";

const subscription = (status: SubscriptionStatus, version: bigint) =>
  create(SubscriptionSchema, {
    id: "sub_1",
    merchantId: "mer_1",
    status,
    customer: { id: "cus_1", email: "a@example.com", name: "A" },
    plan: { id: "plan_1", name: "Coffee", interval: PlanInterval.MONTH, intervalCount: 1 },
    price: { amountMinor: 1999n, currencyCode: "USD" },
    quantity: 1,
    createdAt: timestampFromMs(Date.UTC(2026, 0, 1)),
    version,
  });

describe("SubscriptionEvent ⇄ ChangeEvent", () => {
  it("carries every field both ways: an update comes back equal to what went in", () => {
    const update = create(SubscriptionEventSchema, {
      id: "evt_1",
      type: EventType.SUBSCRIPTION_UPDATED,
      merchantId: "mer_1",
      subscriptionId: "sub_1",
      version: 2n,
      occurredAt: { seconds: 1_790_000_000n, nanos: 123_456_000 },
      subscription: subscription(SubscriptionStatus.PAUSED, 2n),
      previous: subscription(SubscriptionStatus.ACTIVE, 1n),
      changedFields: create(FieldMaskSchema, { paths: ["status"] }),
    });
    const change = changeEventFromSubscriptionEvent(update);
    expect(change.resourceId).toBe("sub_1");
    expect(change.object.case).toBe("subscription");
    expect(change.previous).toMatchObject({ case: "previousSubscription", value: { status: SubscriptionStatus.ACTIVE } });
    expect(equals(SubscriptionEventSchema, subscriptionEventFromChangeEvent(change), update)).toBe(true);
  });

  it("leaves previous unset for a create, and refuses to make a SubscriptionEvent of another resource", () => {
    const created = changeEventFromSubscriptionEvent(
      create(SubscriptionEventSchema, { id: "evt_2", type: EventType.SUBSCRIPTION_CREATED, subscription: subscription(SubscriptionStatus.ACTIVE, 1n) }),
    );
    expect(created.previous.case).toBeUndefined();
    expect(subscriptionEventFromChangeEvent(created).previous).toBeUndefined();
    expect(() => subscriptionEventFromChangeEvent({ ...created, object: { case: undefined } })).toThrow(/not a subscription event/);
  });
});
