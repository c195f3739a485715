import type { SubscriptionEvent } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { deliveryOf, newSubscriptionId, waitFor } from "./support/harness.ts";
import { type ReceivedRequest, versionOf } from "./support/receiver.ts";

describe("delivery order", () => {
  const h = useDeliveryHarness("ordering");

  it("delivers each subscription's versions in order under a burst with failures, without blocking other subscriptions", async () => {
    const merchantId = await h.fixtures.merchant();
    const [blocked, ...flowing] = [newSubscriptionId(), newSubscriptionId(), newSubscriptionId(), newSubscriptionId()];
    let blockBlocked = true;
    const tries = new Map<string, number>();
    const succeeded: ReceivedRequest[] = [];
    const r = await h.receiver((request) => {
      const { subscriptionId, version } = versionOf(request);
      if (subscriptionId === blocked && blockBlocked) return { status: 503 };
      const key = `${subscriptionId}/${version}`;
      const attempt = (tries.get(key) ?? 0) + 1;
      tries.set(key, attempt);
      // Every third version fails once, every fifth twice: retries interleave with other deliveries.
      if ((version % 3 === 0 && attempt === 1) || (version % 5 === 0 && attempt <= 2)) return { status: 500 };
      succeeded.push(request);
      return { status: 200 };
    });
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    h.startPipeline({
      // Enough quick retries that the blocked subscription keeps trying (and does not exhaust) meanwhile.
      retrySchedule: [0, ...Array<number>(300).fill(100)],
      concurrency: 8,
      perEndpointConcurrency: 8,
    });

    const versions = 15;
    const subscriptions = [blocked!, ...flowing];
    for (let version = 1; version <= versions; version++) {
      for (const subscriptionId of subscriptions) await h.publish({ merchantId, subscriptionId, version });
    }

    const delivered = (subscriptionId: string) => succeeded.filter((q) => versionOf(q).subscriptionId === subscriptionId);
    await waitFor("every version of the flowing subscriptions", () => flowing.every((s) => delivered(s!).length === versions));
    // The blocked subscription has been tried, but never beyond its first version.
    const triedBlocked = r.requests.filter((q) => versionOf(q).subscriptionId === blocked);
    expect(triedBlocked.length).toBeGreaterThan(0);
    expect(new Set(triedBlocked.map((q) => versionOf(q).version))).toEqual(new Set([1]));

    blockBlocked = false;
    await waitFor("every version of the blocked subscription", () => delivered(blocked!).length === versions);

    for (const subscriptionId of subscriptions) {
      const seen = r.requests
        .map(versionOf)
        .filter((v) => v.subscriptionId === subscriptionId)
        .map((v) => v.version);
      // Never a later version before an earlier one is done: the sequence never goes down.
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(delivered(subscriptionId!).map((q) => versionOf(q).version)).toEqual(Array.from({ length: versions }, (_, i) => i + 1));
    }
    await waitFor("every delivery recorded as SUCCEEDED", async () => {
      const { rows } = await h.admin.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'SUCCEEDED'", [endpoint.id]);
      return rows[0].n === subscriptions.length * versions;
    });
  });

  it("caps in-flight deliveries per endpoint, so a hanging receiver does not hold up another endpoint", async () => {
    const merchantId = await h.fixtures.merchant();
    const held: Array<() => void> = [];
    const hanging = await h.receiver(() => new Promise((resolve) => held.push(() => resolve({ status: 200 }))));
    const healthy = await h.receiver();
    const slow = await h.createEndpoint({ merchantId, url: hanging.origin });
    const fast = await h.createEndpoint({ merchantId, url: healthy.origin });
    // The merchant's cap leaves room for both of its endpoints: only the endpoint cap is at work here.
    const pipeline = h.startPipeline({ concurrency: 4, perEndpointConcurrency: 2, perMerchantConcurrency: 4 });

    const events: SubscriptionEvent[] = [];
    for (let i = 0; i < 8; i++) events.push(await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 }));
    await waitFor("every delivery to the healthy endpoint", async () => {
      const rows = await Promise.all(events.map((e) => deliveryOf(h.admin, fast.id, e.id)));
      return rows.every((row) => row?.status === "SUCCEEDED");
    });
    // The hanging endpoint holds exactly its cap of requests; the rest wait in the table.
    await waitFor("the hanging endpoint's cap of requests", () => hanging.requests.length >= 2);
    expect(hanging.requests).toHaveLength(2);

    await waitFor("the hanging endpoint's deliveries, released one by one", async () => {
      held.shift()?.();
      const rows = await Promise.all(events.map((e) => deliveryOf(h.admin, slow.id, e.id)));
      return rows.every((row) => row?.status === "SUCCEEDED");
    });
    expect(hanging.requests).toHaveLength(8);
    await pipeline.stop();
  });
});
