import { isDeepStrictEqual } from "node:util";
import { createSubdataClient, type FetchFunction, type SubdataClient } from "@subdata/client";
import { runMirror, type MirrorOptions, type MirrorProgress } from "@subdata/mirror";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollUntil } from "../gateway/gateway-harness.ts";
import { apiSnapshot, copySnapshot, eventsAfter, seedMerchant, startMirrorHarness, syncState, type MirrorHarness } from "./mirror-harness.ts";

let harness: MirrorHarness;
let targetPool: pg.Pool;

beforeAll(async () => {
  harness = await startMirrorHarness();
  targetPool = harness.target;
});

afterAll(async () => {
  await harness?.close();
});

const mirror = (client: SubdataClient, schema: string, options: Partial<MirrorOptions> = {}) =>
  runMirror({ client, pool: targetPool, schema, follow: false, listPageSize: 2, ...options });

/** A client whose connection "dies" (every request fails) once `limit` responses matching `path` have come back. */
function dyingClient(apiUrl: string, key: string, path: RegExp, limit: number): SubdataClient {
  let answered = 0;
  const fetch: FetchFunction = async (request) => {
    if (path.test(new URL(request.url).pathname) && answered >= limit) throw new TypeError("fetch failed (the test cut the connection)");
    const response = await globalThis.fetch(request);
    if (path.test(new URL(request.url).pathname)) answered++;
    return response;
  };
  return createSubdataClient({ baseUrl: apiUrl, apiKey: key, fetch, maxRetries: 0 });
}

async function expectCopyEqualsSource(client: SubdataClient, schema: string): Promise<void> {
  expect(await copySnapshot(targetPool, schema)).toEqual(await apiSnapshot(client));
}

describe("the mirror's initial copy", () => {
  it("copies every subscription, charge, order and line item the key sees, field for field, and nothing else", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 5);
    const other = await harness.merchant();
    await seedMerchant(harness, other.merchantId, 2);

    const result = await mirror(merchant.client, "initial_copy");

    expect(result).toEqual({ phase: "feed", stopped: false, eventsApplied: 0, rows: { subscriptions: 5, charges: 10, orders: 5, order_line_items: 10 } });
    const copy = await copySnapshot(targetPool, "initial_copy");
    expect(copy).toEqual(await apiSnapshot(merchant.client));
    expect(new Set(copy.subscriptions.map((subscription) => subscription.price.currency))).toEqual(new Set(["USD", "JPY", "KWD", "EUR"]));
    expect(await syncState(targetPool, "initial_copy")).toMatchObject({
      phase: "feed",
      subscriptions_walked: true,
      charges_walked: true,
      orders_walked: true,
      events_applied: "0",
    });
  });

  it("keeps money exact with the currency's minor digits", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 4);
    await mirror(merchant.client, "money_digits");
    const prices = await targetPool.query<{ price: string; price_currency: string }>(
      "SELECT price::text AS price, price_currency FROM money_digits.subscriptions ORDER BY price_currency",
    );
    expect(prices.rows).toEqual([
      { price: "20.02", price_currency: "EUR" },
      { price: "2000", price_currency: "JPY" },
      { price: "2.001", price_currency: "KWD" },
      { price: "19.99", price_currency: "USD" },
    ]);
  });
});

describe("the mirror following the feed", () => {
  it("applies creates, updates and deletes of subscriptions, charges and orders, each event once", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 4);
    const before = await merchant.client.listEvents({ cursor: "head" });
    const stop = new AbortController();
    let caughtUp!: () => void;
    const firstCatchUp = new Promise<void>((resolve) => (caughtUp = resolve));
    let expected: Awaited<ReturnType<typeof apiSnapshot>> | undefined;
    // Short long polls: the gateway holds an abandoned one open until its wait ends, and closing waits for it.
    const run = mirror(merchant.client, "following", {
      follow: true,
      waitSeconds: 2,
      signal: stop.signal,
      onProgress: (progress: MirrorProgress) => {
        if (progress.kind === "feed-page" && progress.caughtUp) caughtUp();
      },
    });
    try {
      await Promise.race([firstCatchUp, run.then(() => Promise.reject(new Error("the mirror ended before it caught up")))]);

      const source = harness.source;
      const { fixtures } = harness.gateway;
      const [first, second, third, fourth] = (await apiSnapshot(merchant.client)).subscriptions;
      const created = await fixtures.subscription({ merchantId: merchant.merchantId, currency: "GBP" });
      const createdCharge = await fixtures.charge({ merchantId: merchant.merchantId, subscriptionId: created.id, currency: "GBP" });
      await fixtures.order({ merchantId: merchant.merchantId, subscriptionId: created.id, chargeId: createdCharge, currency: "GBP", lineItems: [{}, {}, {}] });
      await source.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = $1", [first!.id]);
      await source.query("UPDATE subscriptions SET quantity = quantity + 4 WHERE id = $1", [first!.id]);
      await source.query("UPDATE charges SET status = 'REFUNDED', amount_refunded_minor = amount_minor WHERE subscription_id = $1 AND status = 'SUCCEEDED'", [
        second!.id,
      ]);
      await source.query(
        "UPDATE order_line_items SET quantity = 7, total_minor = unit_price_minor * 7 WHERE position = 1 AND order_id = (SELECT id FROM orders WHERE subscription_id = $1)",
        [second!.id],
      );
      await source.query("UPDATE orders SET status = 'FULFILLED' WHERE subscription_id = $1", [first!.id]);
      await source.query("DELETE FROM charges WHERE subscription_id = $1 AND status = 'FAILED'", [third!.id]);
      await source.query("DELETE FROM orders WHERE subscription_id = $1", [third!.id]);
      // Cascades to its charges and orders, each with its own delete event.
      await source.query("DELETE FROM subscriptions WHERE id = $1", [fourth!.id]);

      expected = await apiSnapshot(merchant.client);
      expect(expected.subscriptions.map((subscription) => subscription.id)).not.toContain(fourth!.id);
      expect(expected.orders.find((order) => order.subscription_id === second!.id)?.line_items[0]?.quantity).toBe(7);
      const settled = expected;
      await pollUntil(async () => isDeepStrictEqual(await copySnapshot(targetPool, "following"), settled), "the copy to catch up", 30_000);
    } finally {
      stop.abort(new Error("test done"));
    }
    const result = await run;

    expect(result.stopped).toBe(true);
    expect(await copySnapshot(targetPool, "following")).toEqual(expected);
    expect(result.eventsApplied).toBe(await eventsAfter(merchant.client, before.next_cursor));
    expect(result.eventsApplied).toBeGreaterThanOrEqual(12);
  });
});

describe("a mirror run cut off between pages", () => {
  it("resumes its walk where the last committed page left it, then applies what changed meanwhile", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 5);
    const before = await merchant.client.listEvents({ cursor: "head" });

    const cut = dyingClient(harness.apiUrl, merchant.key, /\/(subscriptions|charges|orders)$/, 4);
    await expect(mirror(cut, "cut_walk")).rejects.toThrow(/the test cut the connection/);
    const interrupted = await syncState(targetPool, "cut_walk");
    expect(interrupted?.phase).toBe("walk");
    expect([interrupted?.subscriptions_walked, interrupted?.charges_walked, interrupted?.orders_walked]).toContain(false);
    const copiedSoFar = await copySnapshot(targetPool, "cut_walk");
    expect(copiedSoFar.subscriptions.length + copiedSoFar.charges.length + copiedSoFar.orders.length).toBeGreaterThan(0);

    // Meanwhile the source changes: rows already copied, rows not yet walked, and new ones.
    const [first] = (await apiSnapshot(merchant.client)).subscriptions;
    await harness.source.query("UPDATE subscriptions SET status = 'PAST_DUE' WHERE id = $1", [first!.id]);
    await harness.source.query("UPDATE orders SET status = 'REFUNDED' WHERE merchant_id = $1", [merchant.merchantId]);
    await harness.source.query("DELETE FROM charges WHERE merchant_id = $1 AND status = 'FAILED'", [merchant.merchantId]);
    await harness.gateway.fixtures.subscription({ merchantId: merchant.merchantId });

    const result = await mirror(merchant.client, "cut_walk");
    expect(result.phase).toBe("feed");
    await expectCopyEqualsSource(merchant.client, "cut_walk");
    expect(result.eventsApplied).toBe(await eventsAfter(merchant.client, before.next_cursor));
  });

  it("resumes the feed from the last committed page, applying no event twice", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 3);
    const before = await merchant.client.listEvents({ cursor: "head" });
    await mirror(merchant.client, "cut_feed");

    const subscriptions = (await apiSnapshot(merchant.client)).subscriptions;
    for (let round = 0; round < 4; round++) {
      for (const subscription of subscriptions) await harness.source.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [subscription.id]);
    }
    await harness.source.query("DELETE FROM orders WHERE merchant_id = $1", [merchant.merchantId]);
    const total = await eventsAfter(merchant.client, before.next_cursor);

    const cut = dyingClient(harness.apiUrl, merchant.key, /\/events$/, 3);
    await expect(mirror(cut, "cut_feed", { feedPageSize: 2 })).rejects.toThrow(/the test cut the connection/);
    const interrupted = await syncState(targetPool, "cut_feed");
    const appliedBeforeCut = Number(interrupted?.events_applied);
    expect(appliedBeforeCut).toBeGreaterThan(0);
    expect(appliedBeforeCut).toBeLessThan(total);

    const result = await mirror(merchant.client, "cut_feed", { feedPageSize: 2 });
    expect(result.eventsApplied).toBe(total);
    await expectCopyEqualsSource(merchant.client, "cut_feed");
  });
});
