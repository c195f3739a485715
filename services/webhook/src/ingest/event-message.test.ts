import { create, toBinary } from "@bufbuild/protobuf";
import { FieldMaskSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type SubscriptionEvent, SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { ChargeStatus, PlanInterval, SubscriptionSchema, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { renderSubscription } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { renderedEvent, renderMessage } from "./event-message.ts";

function subscription(status: SubscriptionStatus, version: bigint) {
  return create(SubscriptionSchema, {
    id: "sub_1",
    merchantId: "mer_1",
    status,
    customer: { id: "cus_1", email: "a@example.com", name: "A" },
    plan: { id: "plan_1", name: "Coffee", interval: PlanInterval.MONTH, intervalCount: 1 },
    price: { amountMinor: 1999n, currencyCode: "USD" },
    quantity: 1,
    createdAt: timestampFromMs(Date.UTC(2026, 0, 1)),
    updatedAt: timestampFromMs(Date.UTC(2026, 0, 2)),
    version,
  });
}

function event(type: EventType) {
  return create(SubscriptionEventSchema, {
    id: "evt_1",
    type,
    merchantId: "mer_1",
    subscriptionId: "sub_1",
    version: 2n,
    occurredAt: { seconds: 1_790_000_000n, nanos: 123_456_789 },
    subscription: subscription(SubscriptionStatus.PAUSED, 2n),
    previous: type === EventType.SUBSCRIPTION_CREATED ? undefined : subscription(SubscriptionStatus.ACTIVE, 1n),
    changedFields: create(FieldMaskSchema, { paths: ["status", "paused_at", "version", "merchant_id"] }),
  });
}

/** A SubscriptionEvent from the stream, stored as ingest stores it. */
const renderEventBody = (subscriptionEvent: SubscriptionEvent) => renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent));

describe("a subscription event's stored body", () => {
  it("renders the Standard Webhooks payload with the REST API's subscription object", () => {
    const rendered = renderEventBody(event(EventType.SUBSCRIPTION_UPDATED));
    const body = JSON.parse(rendered.body);
    expect(Object.keys(body)).toEqual(["id", "type", "timestamp", "data"]);
    expect(body.id).toBe("evt_1");
    expect(body.type).toBe("subscription.updated");
    expect(body.timestamp).toBe("2026-09-21T14:13:20.123Z");
    expect(body.data.object).toEqual(JSON.parse(JSON.stringify(renderSubscription(subscription(SubscriptionStatus.PAUSED, 2n)))));
    expect(body.data.previous_attributes).toEqual({ status: "ACTIVE", paused_at: null, version: 1 });
    expect(rendered.occurredAtExact).toBe("2026-09-21T14:13:20.123456Z");
  });

  it("sends empty previous_attributes for created and deleted", () => {
    for (const type of [EventType.SUBSCRIPTION_CREATED, EventType.SUBSCRIPTION_DELETED]) {
      expect(JSON.parse(renderEventBody(event(type)).body).data.previous_attributes).toEqual({});
    }
    expect(JSON.parse(renderEventBody(event(EventType.SUBSCRIPTION_DELETED)).body).type).toBe("subscription.deleted");
  });

  it("rejects events it cannot render (poison)", () => {
    expect(() => renderEventBody(event(EventType.UNSPECIFIED))).toThrow();
    expect(() => renderEventBody(create(SubscriptionEventSchema, { id: "evt_2", type: EventType.SUBSCRIPTION_CREATED }))).toThrow();
  });
});

describe("a consumed message, decoded by its subject", () => {
  const charge = create(ChangeEventSchema, {
    id: "evt_3",
    type: EventType.CHARGE_CREATED,
    merchantId: "mer_1",
    resourceId: "ch_1",
    version: 1n,
    occurredAt: { seconds: 1_790_000_000n, nanos: 5_000 },
    object: {
      case: "charge",
      value: {
        id: "ch_1",
        subscriptionId: "sub_1",
        status: ChargeStatus.SUCCEEDED,
        amount: { amountMinor: 1999n, currencyCode: "USD" },
        amountRefunded: { amountMinor: 0n, currencyCode: "USD" },
        scheduledAt: { seconds: 1_790_000_000n },
        createdAt: { seconds: 1_790_000_000n },
        version: 1n,
      },
    },
  });

  it("reads a SubscriptionEvent on a subscription subject and a ChangeEvent on a charge or order subject", () => {
    const subscriptionMessage = toBinary(SubscriptionEventSchema, event(EventType.SUBSCRIPTION_CREATED));
    expect(renderMessage("subdata.events.subscription.mer_1", subscriptionMessage)).toMatchObject({
      id: "evt_1",
      resourceId: "sub_1",
      type: "subscription.created",
    });
    const stored = renderMessage("subdata.events.charge.mer_1", toBinary(ChangeEventSchema, charge));
    expect(stored).toMatchObject({ id: "evt_3", resourceId: "ch_1", type: "charge.created", version: 1n, occurredAtExact: "2026-09-21T14:13:20.000005Z" });
    expect(JSON.parse(stored.body)).toMatchObject({ type: "charge.created", data: { object: { id: "ch_1", object: "charge" }, previous_attributes: {} } });
  });

  it("refuses a message whose resource is not its subject's, or on a subject no events are published on (poison)", () => {
    expect(() => renderMessage("subdata.events.order.mer_1", toBinary(ChangeEventSchema, charge))).toThrow(/order subject carries a charge event/);
    expect(() => renderMessage("subdata.events.invoice.mer_1", toBinary(ChangeEventSchema, charge))).toThrow(/no events are published/);
  });
});
