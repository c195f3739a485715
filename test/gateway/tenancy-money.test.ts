import { createOpenApiValidator } from "@subdata/gateway/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "./gateway-harness.ts";

const DIGITS: Record<string, RegExp> = { JPY: /^-?\d+$/, USD: /^-?\d+\.\d{2}$/, KWD: /^-?\d+\.\d{3}$/ };

/** Every money-like object (a string amount or a currency) anywhere in a body, with where it was found. */
function moneyFields(value: unknown, path = "$"): Array<{ path: string; money: Record<string, unknown> }> {
  if (Array.isArray(value)) return value.flatMap((item, index) => moneyFields(item, `${path}[${index}]`));
  if (!value || typeof value !== "object") return [];
  const record = value as Record<string, unknown>;
  if ("currency" in record || typeof record.amount === "string") return [{ path, money: record }];
  return Object.entries(record).flatMap(([key, child]) => moneyFields(child, `${path}.${key}`));
}

describe("tenancy and money through the gateway", () => {
  let h: GatewayHarness;
  const openapi = createOpenApiValidator();
  let merchantA = "";
  let merchantB = "";
  let keyA = "";
  const subscriptionsA: Record<string, string> = {};
  let subscriptionB = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    merchantA = await h.fixtures.merchant();
    merchantB = await h.fixtures.merchant();
    ({ key: keyA } = await h.createKey(merchantA));
    for (const [currency, priceMinor] of [
      ["JPY", 1500],
      ["KWD", 1250],
      ["USD", 1999],
    ] as const) {
      const subscription = await h.fixtures.subscription({ merchantId: merchantA, currency, priceMinor });
      subscriptionsA[currency] = subscription.id;
      const chargeId = await h.fixtures.charge({ merchantId: merchantA, subscriptionId: subscription.id, currency, amountMinor: priceMinor });
      await h.fixtures.order({
        merchantId: merchantA,
        subscriptionId: subscription.id,
        chargeId,
        currency,
        lineItems: [{ unitPriceMinor: priceMinor, quantity: 2 }],
        shippingMinor: 5,
        taxMinor: 1,
      });
    }
    subscriptionB = (await h.fixtures.subscription({ merchantId: merchantB })).id;
    await h.fixtures.order({ merchantId: merchantB, subscriptionId: subscriptionB });
  });

  afterAll(async () => {
    await h?.close();
  });

  it("answers another merchant's subscription 404, shaped exactly like an unknown id", async () => {
    const foreign = await h.request(keyA, `/subscriptions/${subscriptionB}`);
    const unknown = await h.request(keyA, "/subscriptions/sub_00000000000000000000000000000000");
    expect(foreign.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    const strip = (body: Record<string, unknown>) => ({ ...body, instance: null, request_id: null });
    expect(strip(foreign.json())).toEqual(strip(unknown.json()));
    expect(Object.keys(foreign.json())).toEqual(Object.keys(unknown.json()));
    expect(foreign.headers["content-type"]).toBe(unknown.headers["content-type"]);
    openapi.validate("/subscriptions/{id}", "get", foreign);
  });

  it("never lists another merchant's subscriptions or orders", async () => {
    const subscriptions = (await h.request(keyA, "/subscriptions?limit=200")).json();
    expect(subscriptions.data.map((s: { id: string }) => s.id).sort()).toEqual(Object.values(subscriptionsA).sort());
    const orders = (await h.request(keyA, "/orders?limit=200")).json();
    expect(orders.data).toHaveLength(3);
    expect(orders.data.every((o: { subscription_id: string }) => o.subscription_id !== subscriptionB)).toBe(true);
    const foreignFilter = await h.request(keyA, `/orders?subscription_id=${subscriptionB}`);
    expect(foreignFilter.statusCode).toBe(200);
    expect(foreignFilter.json()).toEqual({ object: "list", data: [], has_more: false, next_cursor: null });
  });

  it("gives every money field its currency with the ISO 4217 digits (JPY, KWD, USD)", async () => {
    const responses = [
      await h.request(keyA, "/subscriptions"),
      await h.request(keyA, "/orders"),
      ...(await Promise.all(Object.values(subscriptionsA).map((id) => h.request(keyA, `/subscriptions/${id}`)))),
    ];
    let checked = 0;
    for (const response of responses) {
      expect(response.statusCode).toBe(200);
      for (const { path, money } of moneyFields(response.json())) {
        expect(Object.keys(money).sort(), path).toEqual(["amount", "currency"]);
        expect(typeof money.amount, path).toBe("string");
        expect(money.amount, `${path} in ${money.currency}`).toMatch(DIGITS[String(money.currency)]!);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
    const jpy = (await h.request(keyA, `/subscriptions/${subscriptionsA.JPY}`)).json();
    expect(jpy.price).toEqual({ amount: "1500", currency: "JPY" });
    expect(jpy.charges[0].amount).toEqual({ amount: "1500", currency: "JPY" });
    const kwd = (await h.request(keyA, `/subscriptions/${subscriptionsA.KWD}`)).json();
    expect(kwd.price).toEqual({ amount: "1.250", currency: "KWD" });
    const orders = (await h.request(keyA, `/orders?subscription_id=${subscriptionsA.USD}`)).json();
    expect(orders.data[0].subtotal).toEqual({ amount: "39.98", currency: "USD" });
  });

  it("answers live responses exactly as the OpenAPI document describes", async () => {
    openapi.validate("/subscriptions", "get", await h.request(keyA, "/subscriptions?limit=2"));
    openapi.validate("/subscriptions", "get", await h.request(keyA, "/subscriptions?status=bogus"));
    openapi.validate("/subscriptions", "get", await h.request(undefined, "/subscriptions"));
    openapi.validate("/subscriptions", "get", await h.request("sds_wrong", "/subscriptions"));
    openapi.validate("/subscriptions", "head", await h.request(keyA, "/subscriptions", { method: "HEAD" }));
    openapi.validate("/subscriptions/{id}", "get", await h.request(keyA, `/subscriptions/${subscriptionsA.KWD}`));
    openapi.validate("/orders", "get", await h.request(keyA, "/orders?limit=1"));
    openapi.validate("/orders", "get", await h.request(keyA, "/orders?cursor=garbage"));
  });
});
