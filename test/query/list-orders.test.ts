import { Code } from "@connectrpc/connect";
import { ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import { OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { ListOrdersResponseSchema } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { errorDetailOf } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { useQueryHarness } from "../support/query-server.ts";
import { expectEveryMoneyHasCurrency, rpcError } from "./assertions.ts";

describe("ListOrders", () => {
  const harness = useQueryHarness();

  async function walk(merchantId: string, subscriptionId: string, pageSize: number, between: () => Promise<void> = async () => {}) {
    const ids: string[] = [];
    let pageToken = "";
    for (let pages = 0; pages < 100; pages++) {
      const page = await harness.query.orders.listOrders({ merchantId, subscriptionId, pageSize, pageToken });
      ids.push(...page.orders.map((order) => order.id));
      if (page.nextPageToken === "") return ids;
      pageToken = page.nextPageToken;
      await between();
    }
    throw new Error("walk did not end");
  }

  it("returns orders with their line items in position order, and money in the order's currency", async () => {
    const merchantId = await harness.fixtures.merchant();
    const subscription = await harness.fixtures.subscription({ merchantId, currency: "KWD", priceMinor: 1250 });
    const chargeId = await harness.fixtures.charge({ merchantId, subscriptionId: subscription.id, currency: "KWD", amountMinor: 2751 });
    const order = await harness.fixtures.order({
      merchantId,
      subscriptionId: subscription.id,
      chargeId,
      status: "FULFILLED",
      currency: "KWD",
      lineItems: [
        { sku: "BOX", title: "Monthly box", quantity: 2, unitPriceMinor: 1250 },
        { sku: "TEA", title: "Tea", quantity: 1, unitPriceMinor: 1 },
      ],
      shippingMinor: 500,
      taxMinor: 0,
      discountMinor: 250,
    });
    const jpyOrder = await harness.fixtures.order({ merchantId, subscriptionId: subscription.id, currency: "JPY", lineItems: [{ unitPriceMinor: 1500 }] });

    const page = await harness.query.orders.listOrders({ merchantId });
    expect(page.orders.map((o) => o.id)).toEqual([order.id, jpyOrder.id]);
    expect(page.orders[0]).toMatchObject({
      id: order.id,
      merchantId,
      subscriptionId: subscription.id,
      chargeId,
      number: order.number,
      status: OrderStatus.FULFILLED,
      subtotal: { amountMinor: 2501n, currencyCode: "KWD" },
      discount: { amountMinor: 250n, currencyCode: "KWD" },
      shipping: { amountMinor: 500n, currencyCode: "KWD" },
      tax: { amountMinor: 0n, currencyCode: "KWD" },
      total: { amountMinor: 2751n, currencyCode: "KWD" },
      lineItems: [
        {
          sku: "BOX",
          title: "Monthly box",
          quantity: 2,
          unitPrice: { amountMinor: 1250n, currencyCode: "KWD" },
          total: { amountMinor: 2500n, currencyCode: "KWD" },
        },
        { sku: "TEA", title: "Tea", quantity: 1, unitPrice: { amountMinor: 1n, currencyCode: "KWD" }, total: { amountMinor: 1n, currencyCode: "KWD" } },
      ],
    });
    expect(page.orders[1]!.chargeId).toBeUndefined();
    expect(page.orders[1]!.total).toMatchObject({ amountMinor: 1500n, currencyCode: "JPY" });
    expect(page.orders[1]!.lineItems[0]?.unitPrice).toMatchObject({ amountMinor: 1500n, currencyCode: "JPY" });
    expect(expectEveryMoneyHasCurrency(ListOrdersResponseSchema, page)).toBe(5 + 2 * 2 + 5 + 2);
  });

  it("filters by subscription, and a foreign or unknown subscription id yields an empty list", async () => {
    const mine = await harness.fixtures.merchant();
    const theirs = await harness.fixtures.merchant();
    const first = await harness.fixtures.subscription({ merchantId: mine });
    const second = await harness.fixtures.subscription({ merchantId: mine });
    const foreign = await harness.fixtures.subscription({ merchantId: theirs });
    const firstOrder = await harness.fixtures.order({ merchantId: mine, subscriptionId: first.id });
    const secondOrder = await harness.fixtures.order({ merchantId: mine, subscriptionId: second.id });
    await harness.fixtures.order({ merchantId: theirs, subscriptionId: foreign.id });

    expect((await harness.query.orders.listOrders({ merchantId: mine, subscriptionId: first.id })).orders.map((o) => o.id)).toEqual([firstOrder.id]);
    expect((await harness.query.orders.listOrders({ merchantId: mine })).orders.map((o) => o.id)).toEqual([firstOrder.id, secondOrder.id]);
    expect((await harness.query.orders.listOrders({ merchantId: mine, subscriptionId: foreign.id })).orders).toEqual([]);
    expect((await harness.query.orders.listOrders({ merchantId: mine, subscriptionId: `sub_${"f".repeat(32)}` })).orders).toEqual([]);
  });

  it("walks every order exactly once, ties on created_at included, while orders are added and deleted", async () => {
    const merchantId = await harness.fixtures.merchant();
    const subscription = await harness.fixtures.subscription({ merchantId });
    const other = await harness.fixtures.subscription({ merchantId });
    const stable: string[] = [];
    const doomed: string[] = [];
    for (let i = 0; i < 30; i++) {
      const createdAt = `2026-02-02 00:00:00.00000${i % 3}+00`;
      const order = await harness.fixtures.order({ merchantId, subscriptionId: i % 5 === 0 ? other.id : subscription.id, createdAt });
      if (i % 5 === 0) continue;
      (i % 4 === 0 ? doomed : stable).push(order.id);
    }
    const between = async () => {
      const victim = doomed.pop();
      if (victim !== undefined) await harness.admin.query("DELETE FROM orders WHERE id = $1", [victim]);
      await harness.fixtures.order({ merchantId, subscriptionId: subscription.id, createdAt: "2026-02-02 00:00:00.000001+00" });
    };
    for (const filter of ["", subscription.id]) {
      const ids = await walk(merchantId, filter, 7, between);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toEqual(expect.arrayContaining(stable));
    }
    const ordered = await harness.admin.query("SELECT id FROM orders WHERE merchant_id = $1 ORDER BY created_at, id", [merchantId]);
    expect(await walk(merchantId, "", 4)).toEqual(ordered.rows.map((row) => row.id));
  });

  it("refuses a token made for another subscription filter or another merchant, and a tampered one", async () => {
    const merchantId = await harness.fixtures.merchant();
    const otherMerchantId = await harness.fixtures.merchant();
    const subscription = await harness.fixtures.subscription({ merchantId });
    for (let i = 0; i < 3; i++) await harness.fixtures.order({ merchantId, subscriptionId: subscription.id });
    const { nextPageToken } = await harness.query.orders.listOrders({ merchantId, subscriptionId: subscription.id, pageSize: 1 });
    expect(nextPageToken).not.toBe("");

    const attempts = [
      { merchantId, pageToken: nextPageToken },
      { merchantId, subscriptionId: `sub_${"a".repeat(32)}`, pageToken: nextPageToken },
      { merchantId: otherMerchantId, subscriptionId: subscription.id, pageToken: nextPageToken },
      { merchantId, subscriptionId: subscription.id, pageToken: `${nextPageToken.slice(0, -2)}AA` },
    ];
    for (const attempt of attempts) {
      const error = await rpcError(harness.query.orders.listOrders({ pageSize: 1, ...attempt }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
    }
  });

  it.each([
    ["merchant_id", { merchantId: "" }],
    ["page_size", { merchantId: "mer_x", pageSize: 1000 }],
    ["subscription_id", { merchantId: "mer_x", subscriptionId: "ord_123" }],
    ["subscription_id", { merchantId: "mer_x", subscriptionId: "sub_a-b" }],
  ])("refuses a bad %s with INVALID_ARGUMENT", async (field, request) => {
    const error = await rpcError(harness.query.orders.listOrders(request));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(errorDetailOf(error)).toMatchObject({ reason: ErrorReason.INVALID_ARGUMENT, fieldViolations: [{ field }] });
  });
});
