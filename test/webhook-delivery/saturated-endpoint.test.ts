import { describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, waitFor } from "./support/harness.ts";
import { versionOf } from "./support/receiver.ts";

/**
 * Once a claim that skipped the endpoints at their cap found nothing else due, the worker holds back
 * such claims until something may have made another endpoint's rows due (delivery-worker.ts; its unit
 * tests show when the hold is set and what ends it). End to end, with the poll far beyond the test's
 * wait: whatever the hold does, the other endpoint's rows still go out on the wake-ups and recorded
 * attempts alone. Whether a hold is in force when they arrive is up to timing, and not asserted.
 */
describe("an endpoint at its cap", () => {
  const h = useDeliveryHarness("saturated");

  it("does not hold up another endpoint's new deliveries or its next versions", async () => {
    const [busyMerchant, otherMerchant] = [await h.fixtures.merchant(), await h.fixtures.merchant()];
    const held: Array<() => void> = [];
    const hanging = await h.receiver(() => new Promise((resolve) => held.push(() => resolve({ status: 200 }))));
    const healthy = await h.receiver();
    await h.createEndpoint({ merchantId: busyMerchant, url: hanging.origin });
    await h.createEndpoint({ merchantId: otherMerchant, url: healthy.origin });
    const pipeline = h.startPipeline({
      concurrency: 4,
      perEndpointConcurrency: 2,
      // Neither the poll nor a timed-out hanging request may free anything during the test.
      pollIntervalMs: 120_000,
      requestTimeoutMs: 120_000,
    });

    for (let i = 0; i < 6; i++) await h.publish({ merchantId: busyMerchant, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("the hanging endpoint's cap of requests", () => hanging.requests.length >= 2);
    // Every busy row stored: the claims their wake-ups caused could find only rows of the endpoint at its cap.
    await waitFor("the hanging endpoint's six deliveries stored", async () => {
      const { rows } = await h.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE merchant_id = $1", [busyMerchant]);
      return rows[0]!.n === 6;
    });

    const subscriptionId = newSubscriptionId();
    for (let version = 1; version <= 3; version++) await h.publish({ merchantId: otherMerchant, subscriptionId, version });
    await waitFor("every version at the healthy endpoint", () => healthy.requests.length >= 3);
    expect(healthy.requests.map((request) => versionOf(request).version)).toEqual([1, 2, 3]);
    expect(hanging.requests).toHaveLength(2);

    await waitFor("the hanging endpoint's deliveries, released one by one", () => {
      held.shift()?.();
      return hanging.requests.length === 6 && held.length === 0;
    });
    await pipeline.stop();
  });
});
