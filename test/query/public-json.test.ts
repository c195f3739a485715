import { renderCharge, renderOrder, renderSubscription } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures, type Fixtures } from "../support/fixtures.ts";
import { type RunningQueryServer, startQueryServer } from "../support/query-server.ts";

// render_public_json against real rows and the real wire: the JSON the query service writes from SQL
// rows equals, byte for byte, the shared renderers' JSON of the typed answer to the same request.

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const STATUSES = ["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"] as const;
const CHARGE_STATUSES = ["PENDING", "SUCCEEDED", "FAILED", "SKIPPED", "REFUNDED", "PARTIALLY_REFUNDED"] as const;
const ORDER_STATUSES = ["PAID", "FULFILLED", "CANCELLED", "REFUNDED"] as const;
const CURRENCIES = [
  ["JPY", 1500],
  ["USD", 1999],
  ["KWD", 1250],
  ["USD", 5],
] as const;
const ODD = 'Ünïcødé "quoted" \\ back\nslash 🎉 \u2028';

describe("render_public_json", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  let fixtures: Fixtures;
  let query: RunningQueryServer;
  let merchantId = "";
  const subscriptionIds: string[] = [];

  beforeAll(async () => {
    fixtures = createFixtures(admin);
    query = await startQueryServer();
    merchantId = await fixtures.merchant();
    const customerId = await fixtures.customer(merchantId, { name: ODD, email: "odd+tag@example.com" });
    let n = 0;
    for (const status of STATUSES) {
      for (const [currency, priceMinor] of CURRENCIES) {
        const set = (bit: number, value: string) => (n & bit ? value : null);
        const subscription = await fixtures.subscription({
          merchantId,
          customerId: n % 2 === 0 ? customerId : undefined,
          status,
          currency,
          priceMinor,
          quantity: (n % 3) + 1,
          // Whole seconds, a short fraction and full microseconds all occur.
          createdAt: `2026-03-01 00:00:${String(n).padStart(2, "0")}${n % 3 === 0 ? "" : n % 3 === 1 ? ".5" : ".123456"}+00`,
          nextChargeAt: set(1, "2026-04-01 00:00:00.000001+00"),
          trialEndsAt: set(2, "2026-03-15 12:00:00+00"),
          pausedAt: set(4, "2026-03-10 08:30:00.999999+00"),
          cancelledAt: set(8, "2026-03-20 23:59:59.1+00"),
          cancellationReason: n % 5 === 0 ? ODD : null,
        });
        subscriptionIds.push(subscription.id);
        const status2 = CHARGE_STATUSES[n % CHARGE_STATUSES.length]!;
        const chargeId = await fixtures.charge({
          merchantId,
          subscriptionId: subscription.id,
          status: status2,
          currency,
          amountMinor: priceMinor,
          amountRefundedMinor: n % 2,
          failureCode: n & 1 ? "card_declined" : null,
          failureMessage: n & 2 ? ODD : null,
          processedAt: n & 4 ? "2026-03-02 00:00:00+00" : null,
        });
        await fixtures.charge({ merchantId, subscriptionId: subscription.id, currency, amountMinor: 0 });
        // Orders only for the first four (every order status, every currency, 0–2 line items): the
        // EXPLAIN tests of query-server.test.ts pick their index on a tiny orders table, and more rows
        // here tip its planner's tie to the other index.
        if (n < ORDER_STATUSES.length) {
          await fixtures.order({
            merchantId,
            subscriptionId: subscription.id,
            chargeId: n % 2 === 0 ? chargeId : null,
            status: ORDER_STATUSES[n % ORDER_STATUSES.length]!,
            currency,
            lineItems: Array.from({ length: n % 3 }, (_, i) => ({ sku: `SKU${i}`, title: i === 1 ? ODD : "Box", quantity: i + 1, unitPriceMinor: priceMinor })),
            shippingMinor: n,
          });
        }
        n++;
      }
    }
  });

  afterAll(async () => {
    await query?.stop();
    await admin.end();
  });

  it("lists subscriptions as the typed page renders, with ids, the same token and no typed items", async () => {
    for (const pageSize of [7, 200]) {
      let pageToken = "";
      let pages = 0;
      do {
        const typed = await query.subscriptions.listSubscriptions({ merchantId, pageSize, pageToken });
        const rendered = await query.subscriptions.listSubscriptions({ merchantId, pageSize, pageToken, renderPublicJson: true });
        expect(rendered.subscriptions).toEqual([]);
        expect(text(rendered.publicJson)).toBe(JSON.stringify(typed.subscriptions.map(renderSubscription)));
        expect(rendered.publicIds).toEqual(typed.subscriptions.map((s) => s.id));
        expect(rendered.nextPageToken).toBe(typed.nextPageToken);
        pageToken = typed.nextPageToken;
        pages++;
      } while (pageToken !== "");
      expect(pages).toBe(Math.ceil(subscriptionIds.length / pageSize));
    }
  });

  it("gets each subscription with its charges as the typed answer renders", async () => {
    for (const subscriptionId of subscriptionIds) {
      const typed = await query.subscriptions.getSubscription({ merchantId, subscriptionId });
      const rendered = await query.subscriptions.getSubscription({ merchantId, subscriptionId, renderPublicJson: true });
      expect(rendered.subscription).toBeUndefined();
      expect(rendered.charges).toEqual([]);
      expect(text(rendered.publicJson)).toBe(JSON.stringify({ ...renderSubscription(typed.subscription!), charges: typed.charges.map(renderCharge) }));
    }
  });

  it("lists orders with line items as the typed page renders", async () => {
    const typed = await query.orders.listOrders({ merchantId, pageSize: 200 });
    const rendered = await query.orders.listOrders({ merchantId, pageSize: 200, renderPublicJson: true });
    expect(typed.orders).toHaveLength(ORDER_STATUSES.length);
    expect(rendered.orders).toEqual([]);
    expect(text(rendered.publicJson)).toBe(JSON.stringify(typed.orders.map(renderOrder)));
    expect(rendered.publicIds).toEqual(typed.orders.map((o) => o.id));
    const empty = await query.orders.listOrders({ merchantId, subscriptionId: "sub_none", renderPublicJson: true });
    expect(text(empty.publicJson)).toBe("[]");
    expect(empty.publicIds).toEqual([]);
  });

  describe("render_public_list: the whole REST list object around the same items", () => {
    // Spelled out here rather than taken from @subdata/runtime, so a wrong envelope there fails.
    const listObject = (items: Uint8Array, nextPageToken: string) =>
      `{"object":"list","data":${text(items)},"has_more":${nextPageToken !== ""},"next_cursor":${nextPageToken === "" ? "null" : JSON.stringify(nextPageToken)}}`;

    it("subscriptions, every page, the last one with next_cursor null", async () => {
      let pageToken = "";
      do {
        const items = await query.subscriptions.listSubscriptions({ merchantId, pageSize: 7, pageToken, renderPublicJson: true });
        const whole = await query.subscriptions.listSubscriptions({ merchantId, pageSize: 7, pageToken, renderPublicJson: true, renderPublicList: true });
        expect(whole.publicJson).toHaveLength(0);
        expect(text(whole.publicListJson)).toBe(listObject(items.publicJson, whole.nextPageToken));
        expect(whole.publicIds).toEqual(items.publicIds);
        pageToken = whole.nextPageToken;
      } while (pageToken !== "");
    });

    it("orders and charges, and their empty pages", async () => {
      for (const subscriptionId of ["", "sub_none"]) {
        const orderItems = await query.orders.listOrders({ merchantId, subscriptionId, pageSize: 2, renderPublicJson: true });
        const orders = await query.orders.listOrders({ merchantId, subscriptionId, pageSize: 2, renderPublicJson: true, renderPublicList: true });
        expect(orders.publicJson).toHaveLength(0);
        expect(text(orders.publicListJson)).toBe(listObject(orderItems.publicJson, orders.nextPageToken));
        expect(orders.publicIds).toEqual(orderItems.publicIds);
      }
      const chargeItems = await query.subscriptions.listCharges({ merchantId, subscriptionId: subscriptionIds[0]!, renderPublicJson: true });
      const charges = await query.subscriptions.listCharges({
        merchantId,
        subscriptionId: subscriptionIds[0]!,
        renderPublicJson: true,
        renderPublicList: true,
      });
      expect(chargeItems.publicIds.length).toBeGreaterThan(0);
      expect(charges.publicJson).toHaveLength(0);
      expect(text(charges.publicListJson)).toBe(listObject(chargeItems.publicJson, charges.nextPageToken));
    });

    it("the feed: next_cursor never null, has_more as the page says, also at the head", async () => {
      for (const start of [{ pageToken: "" }, { startAtHead: true }]) {
        const items = await query.events.listEvents({ merchantId, ...start, renderPublicJson: true });
        const whole = await query.events.listEvents({ merchantId, ...start, renderPublicJson: true, renderPublicList: true });
        expect(whole.publicJson).toHaveLength(0);
        expect(whole.nextPageToken).not.toBe("");
        expect(text(whole.publicListJson)).toBe(
          `{"object":"list","data":${text(items.publicJson)},"has_more":${whole.hasMore},"next_cursor":${JSON.stringify(whole.nextPageToken)}}`,
        );
      }
    });
  });
});
