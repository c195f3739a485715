import { create } from "@bufbuild/protobuf";
import { OrderSchema, OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { PlanInterval, SubscriptionSchema, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { describe, expect, it } from "vitest";
import { previousAttributes, renderOrder, renderSubscription } from "./public-objects.ts";
import { pgTimestampToProto } from "./time.ts";

const subscription = create(SubscriptionSchema, {
  id: "sub_1",
  merchantId: "mer_1",
  status: SubscriptionStatus.PAST_DUE,
  customer: { id: "cus_1", email: "a@example.com", name: "A" },
  plan: { id: "plan_1", name: "Box", interval: PlanInterval.MONTH, intervalCount: 3 },
  price: { amountMinor: 1500n, currencyCode: "JPY" },
  quantity: 2,
  currentPeriodStart: pgTimestampToProto("2026-01-01 00:00:00.123456+00"),
  createdAt: pgTimestampToProto("2025-12-01 10:20:30+00"),
  version: 7n,
});

describe("public objects", () => {
  it("renders a subscription with every contract field, nulls for unset times and money with its currency", () => {
    const rendered = renderSubscription(subscription);
    expect(rendered).toMatchObject({
      id: "sub_1",
      object: "subscription",
      status: "PAST_DUE",
      plan: { interval: "MONTH", interval_count: 3 },
      price: { amount: "1500", currency: "JPY" },
      current_period_start: "2026-01-01T00:00:00.123Z",
      created_at: "2025-12-01T10:20:30.000Z",
      next_charge_at: null,
      cancellation_reason: null,
      version: 7,
    });
    expect(rendered).not.toHaveProperty("merchant_id");
  });

  it("renders order money in the order's currency with ISO digits", () => {
    const money = (amountMinor: bigint) => ({ amountMinor, currencyCode: "KWD" });
    const order = renderOrder(
      create(OrderSchema, {
        id: "ord_1",
        subscriptionId: "sub_1",
        number: 12n,
        status: OrderStatus.PAID,
        subtotal: money(10_000n),
        discount: money(0n),
        shipping: money(500n),
        tax: money(250n),
        total: money(10_750n),
        lineItems: [{ sku: "A", title: "A", quantity: 2, unitPrice: money(5_000n), total: money(10_000n) }],
      }),
    );
    expect(order.total).toEqual({ amount: "10.750", currency: "KWD" });
    expect(order.line_items[0]?.unit_price).toEqual({ amount: "5.000", currency: "KWD" });
    expect(order.charge_id).toBeNull();
  });

  it("takes previous attributes for the changed fields only, never private ones", () => {
    expect(previousAttributes(renderSubscription(subscription), ["status", "merchant_id", "price"])).toEqual({
      status: "PAST_DUE",
      price: { amount: "1500", currency: "JPY" },
    });
  });

  it("refuses to render an unspecified status instead of inventing one", () => {
    expect(() => renderSubscription(create(SubscriptionSchema, { ...subscription, status: SubscriptionStatus.UNSPECIFIED }))).toThrow();
  });
});
