import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { createPageTokenCodec, errorDetailOf } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import type { OrderRepository, OrderRow } from "./order-repository.ts";
import type { SubscriptionScopedListQuery } from "./subscription-scoped-list.ts";
import { createQueryRoutes } from "./routes.ts";
import type { ListSubscriptionsQuery, SubscriptionRepository, SubscriptionRow, SubscriptionWithChargesRow } from "./subscription-repository.ts";

// In-memory: the real service factories over fake repositories, through createRouterTransport.

function subscriptionRow(id: string, createdAt: string, overrides: Partial<SubscriptionRow> = {}): SubscriptionRow {
  return {
    id,
    merchant_id: "mer_a",
    status: "ACTIVE",
    price_minor: 1500n,
    currency: "JPY",
    quantity: 1,
    current_period_start: "2026-01-01 00:00:00+00",
    current_period_end: "2026-02-01 00:00:00+00",
    next_charge_at: null,
    trial_ends_at: null,
    paused_at: null,
    cancelled_at: null,
    cancellation_reason: null,
    created_at: createdAt,
    updated_at: createdAt,
    version: 3n,
    customer_id: "cus_a",
    customer_email: "a@example.com",
    customer_name: "A",
    plan_id: "plan_a",
    plan_name: "Box",
    plan_interval: "MONTH",
    plan_interval_count: 1,
    ...overrides,
  };
}

function setup(data: { subscriptions?: SubscriptionRow[]; charged?: SubscriptionWithChargesRow; orders?: OrderRow[] } = {}) {
  const listCalls: ListSubscriptionsQuery[] = [];
  const orderCalls: SubscriptionScopedListQuery[] = [];
  const subscriptions: SubscriptionRepository = {
    async list(query) {
      listCalls.push(query);
      const all = data.subscriptions ?? [];
      const start = query.after === null ? 0 : all.findIndex((row) => row.id === query.after!.id) + 1;
      return all.slice(start, start + query.limit);
    },
    async findWithCharges(merchantId, id) {
      return data.charged && data.charged.id === id && data.charged.merchant_id === merchantId ? data.charged : undefined;
    },
  };
  const orders: OrderRepository = {
    async list(query) {
      orderCalls.push(query);
      return (data.orders ?? []).slice(0, query.limit);
    },
  };
  const transport = createRouterTransport(
    createQueryRoutes({
      subscriptions,
      orders,
      charges: { list: async () => [] },
      events: {
        page: async () => ({ rows: [], scanned: null }),
        head: async () => 0n,
        purgedThrough: async () => null,
      },
      changes: { subscribe: () => ({ changed: new Promise(() => {}), cancel() {} }), close: async () => {} },
      pageTokens: createPageTokenCodec("x".repeat(32)),
    }),
  );
  return {
    listCalls,
    orderCalls,
    subscriptionClient: createClient(SubscriptionService, transport),
    orderClient: createClient(OrderService, transport),
  };
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  return call.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => ConnectError.from(error),
  );
}

describe("SubscriptionService in memory", () => {
  it("asks for page_size + 1 rows, returns page_size and a token that continues after the last one", async () => {
    const rows = ["sub_1", "sub_2", "sub_3"].map((id, i) => subscriptionRow(id, `2026-01-01 00:00:00.00000${i}+00`));
    const { subscriptionClient, listCalls } = setup({ subscriptions: rows });
    const first = await subscriptionClient.listSubscriptions({ merchantId: "mer_a", pageSize: 2, status: SubscriptionStatus.ACTIVE });
    expect(first.subscriptions.map((s) => s.id)).toEqual(["sub_1", "sub_2"]);
    expect(listCalls[0]).toEqual({ merchantId: "mer_a", status: "ACTIVE", after: null, limit: 3 });

    const second = await subscriptionClient.listSubscriptions({
      merchantId: "mer_a",
      pageSize: 2,
      status: SubscriptionStatus.ACTIVE,
      pageToken: first.nextPageToken,
    });
    expect(listCalls[1]?.after).toEqual({ at: "2026-01-01 00:00:00.000001+00", id: "sub_2" });
    expect(second.subscriptions.map((s) => s.id)).toEqual(["sub_3"]);
    expect(second.nextPageToken).toBe("");
  });

  it("maps a row to the message with money, microseconds and enums", async () => {
    const { subscriptionClient } = setup({ subscriptions: [subscriptionRow("sub_1", "2026-01-01 00:00:00.000007+00")] });
    const [subscription] = (await subscriptionClient.listSubscriptions({ merchantId: "mer_a" })).subscriptions;
    expect(subscription).toMatchObject({ price: { amountMinor: 1500n, currencyCode: "JPY" }, version: 3n, createdAt: { nanos: 7000 } });
  });

  it("fails loudly (INTERNAL) rather than show a customer of another merchant", async () => {
    const { subscriptionClient } = setup({
      subscriptions: [subscriptionRow("sub_1", "2026-01-01 00:00:00+00", { customer_email: null, customer_name: null })],
    });
    const error = await failure(subscriptionClient.listSubscriptions({ merchantId: "mer_a" }));
    expect(error.code).toBe(Code.Internal);
  });

  it("refuses a token from another status filter before reading anything", async () => {
    const rows = ["sub_1", "sub_2"].map((id) => subscriptionRow(id, "2026-01-01 00:00:00+00"));
    const { subscriptionClient, listCalls } = setup({ subscriptions: rows });
    const first = await subscriptionClient.listSubscriptions({ merchantId: "mer_a", pageSize: 1 });
    const error = await failure(
      subscriptionClient.listSubscriptions({ merchantId: "mer_a", pageSize: 1, status: SubscriptionStatus.PAUSED, pageToken: first.nextPageToken }),
    );
    expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
    expect(listCalls).toHaveLength(1);
  });

  it("answers NOT_FOUND for a malformed id without reading", async () => {
    const { subscriptionClient } = setup();
    const error = await failure(subscriptionClient.getSubscription({ merchantId: "mer_a", subscriptionId: "cus_1" }));
    expect(error.code).toBe(Code.NotFound);
  });

  it("returns the charges in the order the repository gave them, each with its currency", async () => {
    const charged: SubscriptionWithChargesRow = {
      ...subscriptionRow("sub_1", "2026-01-01 00:00:00+00"),
      charges: [
        {
          id: "ch_1",
          subscription_id: "sub_1",
          status: "REFUNDED",
          amount_minor: "9007199254740993",
          amount_refunded_minor: "9007199254740993",
          currency: "KWD",
          order_id: "ord_1",
          failure_code: null,
          failure_message: null,
          scheduled_at: "2026-01-01 00:00:00+00",
          processed_at: "2026-01-01 00:00:01.5+00",
          created_at: "2026-01-01 00:00:00+00",
          version: "3",
        },
      ],
    };
    const { subscriptionClient } = setup({ charged });
    const response = await subscriptionClient.getSubscription({ merchantId: "mer_a", subscriptionId: "sub_1" });
    expect(response.charges[0]).toMatchObject({
      subscriptionId: "sub_1",
      orderId: "ord_1",
      amount: { amountMinor: 9007199254740993n, currencyCode: "KWD" },
      processedAt: { nanos: 500_000_000 },
    });
  });
});

describe("OrderService in memory", () => {
  it("passes the subscription filter through and binds the token to it", async () => {
    const order = (id: string): OrderRow => ({
      id,
      merchant_id: "mer_a",
      subscription_id: "sub_1",
      charge_id: null,
      number: 1n,
      status: "PAID",
      currency: "USD",
      subtotal_minor: 100n,
      discount_minor: 0n,
      shipping_minor: 0n,
      tax_minor: 0n,
      total_minor: 100n,
      created_at: "2026-01-01 00:00:00+00",
      updated_at: "2026-01-01 00:00:00+00",
      version: 2n,
      line_items: [{ sku: "A", title: "A", quantity: 1, unit_price_minor: "100", total_minor: "100" }],
    });
    const { orderClient, orderCalls } = setup({ orders: [order("ord_1"), order("ord_2")] });
    const page = await orderClient.listOrders({ merchantId: "mer_a", subscriptionId: "sub_1", pageSize: 1 });
    expect(orderCalls[0]).toMatchObject({ subscriptionId: "sub_1", limit: 2 });
    expect(page.orders[0]?.lineItems[0]?.total).toMatchObject({ amountMinor: 100n, currencyCode: "USD" });
    const error = await failure(orderClient.listOrders({ merchantId: "mer_a", pageSize: 1, pageToken: page.nextPageToken }));
    expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
  });
});
