import { renderCharge, renderOrder, renderSubscription } from "@subdata/runtime";
import { beforeEach, describe, expect, it } from "vitest";
import { fakeCharge, fakeOrder, fakeSubscription } from "./test-support/fake-upstreams.ts";
import { createTestGateway, KEY, MERCHANT, type TestGateway } from "./test-support/test-gateway.ts";

// The read routes ask the query service for the public rendering and send its bytes as they came.

const auth = { authorization: `Bearer ${KEY}` };
let t: TestGateway;

function get(url: string) {
  return t.gateway.inject({ method: "GET", url: `/api/v1${url}`, headers: auth });
}

beforeEach(() => {
  t = createTestGateway();
  t.fake.subscriptions.push(fakeSubscription({ id: "sub_a1", merchantId: MERCHANT }), fakeSubscription({ id: "sub_a2", merchantId: MERCHANT }));
  t.fake.charges.push(fakeCharge({ id: "ch_1", subscriptionId: "sub_a1", currencyCode: "KWD", amountMinor: 1250n }));
  t.fake.orders.push(fakeOrder({ id: "ord_1", merchantId: MERCHANT, subscriptionId: "sub_a1", currencyCode: "JPY" }));
});

describe("pre-rendered responses", () => {
  // The same bodies whether the query service renders the whole list object or, older than
  // render_public_list, the items alone for the gateway to wrap.
  for (const itemsOnly of [false, true]) {
    it(`asks for the public rendering and answers the list object byte for byte (${itemsOnly ? "items alone, wrapped here" : "whole list object"})`, async () => {
      t.fake.behaviour.itemsOnly = itemsOnly;
      t.fake.behaviour.nextPageToken = "opaque.token";
      const list = await get("/subscriptions?limit=2");
      expect(t.fake.listSubscriptionCalls[0]).toMatchObject({ renderPublicJson: true, renderPublicList: true });
      expect(list.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(list.body).toBe(
        `{"object":"list","data":${JSON.stringify(t.fake.subscriptions.map(renderSubscription))},"has_more":true,"next_cursor":"opaque.token"}`,
      );

      t.fake.behaviour.nextPageToken = "";
      const orders = await get("/orders");
      expect(t.fake.listOrderCalls[0]).toMatchObject({ renderPublicJson: true, renderPublicList: true });
      expect(orders.body).toBe(`{"object":"list","data":${JSON.stringify(t.fake.orders.map(renderOrder))},"has_more":false,"next_cursor":null}`);

      const charges = await get("/charges?subscription_id=sub_a1");
      expect(charges.body).toBe(`{"object":"list","data":${JSON.stringify(t.fake.charges.map(renderCharge))},"has_more":false,"next_cursor":null}`);

      t.fake.behaviour.nextPageToken = "feed.position";
      const feed = await get("/events");
      expect(t.fake.listEventsCalls[0]).toMatchObject({ renderPublicJson: true, renderPublicList: true });
      expect(feed.body).toBe(`{"object":"list","data":[],"has_more":false,"next_cursor":"feed.position"}`);

      const one = await get("/subscriptions/sub_a1");
      expect(one.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(one.body).toBe(JSON.stringify({ ...renderSubscription(t.fake.subscriptions[0]!), charges: t.fake.charges.map(renderCharge) }));
    });
  }

  it("audits the ids the query service listed next to the JSON", async () => {
    await get("/subscriptions");
    expect(t.fake.audits.at(-1)).toMatchObject({ resourceIds: ["sub_a1", "sub_a2"], resultCount: 2, status: 200 });
  });

  it("answers 500, not a guess, when the query service ignores render_public_json", async () => {
    t.fake.behaviour.typedOnly = true;
    for (const url of ["/subscriptions", "/subscriptions/sub_a1", "/orders"]) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(500);
      expect(response.json().code).toBe("internal_error");
    }
  });
});
