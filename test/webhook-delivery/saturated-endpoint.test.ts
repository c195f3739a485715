import { describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, waitFor } from "./support/harness.ts";
import type { ReceivedRequest } from "./support/receiver.ts";

function versionOf(request: ReceivedRequest): { subscriptionId: string; version: number } {
  const body = JSON.parse(request.body);
  return { subscriptionId: body.data.object.id, version: body.data.object.version };
}

/**
 * Once a claim that skipped the endpoints at their cap found nothing else due, the worker holds back
 * such claims until something may have made another endpoint's rows due (delivery-worker.ts). The poll
 * is set far beyond the test's wait, so only those signals can get the other endpoint's rows sent.
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
    const pipeline = h.startPipeline([busyMerchant, otherMerchant], {
      concurrency: 4,
      perEndpointConcurrency: 2,
      // Neither the poll nor a timed-out hanging request may free anything during the test.
      pollIntervalMs: 120_000,
      requestTimeoutMs: 120_000,
    });

    for (let i = 0; i < 6; i++) await h.publish({ merchantId: busyMerchant, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("the hanging endpoint's cap of requests", () => hanging.requests.length >= 2);
    // Let the claims that follow the last stored batch run: they find only the hanging endpoint's rows.
    await new Promise((resolve) => setTimeout(resolve, 300));

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
