import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { describe, expect, it } from "vitest";
import { type ClaimedDelivery, type ClaimOptions, createClaimRepository } from "../../services/webhook/src/delivery/claim-repository.ts";
import { recordAttempts } from "../../services/webhook/src/delivery/record-repository.ts";
import { renderedEvent } from "../../services/webhook/src/ingest/event-message.ts";
import { ingestEvent } from "../../services/webhook/src/ingest/ingest-repository.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import type { Harness } from "./support/harness.ts";
import { newSubscriptionId, subscriptionEvent, succeededAttempt, waitFor } from "./support/harness.ts";
import { versionOf } from "./support/receiver.ts";

/**
 * Fair shares (claim-repository.ts): deliveries in flight are counted in the database, by endpoint and
 * by merchant, so the caps hold for claims of several replicas at once; a merchant whose receivers are
 * slow holds its merchant cap of the slots, and another merchant's deliveries go out beside it.
 */

const options = (overrides: Partial<ClaimOptions> = {}): ClaimOptions => ({
  limit: 100,
  healthyCap: 4,
  failingCap: 1,
  merchantCap: 6,
  fullEndpointIds: [],
  leaseMs: 60_000,
  scanLimit: 256,
  ...overrides,
});

/** `count` events of new subscriptions for the merchant: each a due head at every endpoint of it. */
async function ingestEvents(h: Harness, merchantId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await ingestEvent(
      h.pool,
      renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent({ merchantId, subscriptionId: newSubscriptionId(), version: 1 }))),
    );
  }
}

const countBy = (deliveries: readonly ClaimedDelivery[], key: (delivery: ClaimedDelivery) => string) => {
  const counts = new Map<string, number>();
  for (const delivery of deliveries) counts.set(key(delivery), (counts.get(key(delivery)) ?? 0) + 1);
  return counts;
};

describe("fair claims", () => {
  const h = useDeliveryHarness("fair");
  /** Records each delivery's attempt as a success (the room it held is freed). */
  const record = (deliveries: readonly ClaimedDelivery[]) =>
    recordAttempts(h.pool, deliveries.map(succeededAttempt), { disableAfterMs: 86_400_000, disableReason: "test" });

  it("never hands out more than the endpoint and merchant caps, even to replicas claiming at once", async () => {
    const busy = await h.fixtures.merchant();
    const other = await h.fixtures.merchant();
    const busyEndpoints = [];
    for (let i = 0; i < 3; i++) busyEndpoints.push(await h.createEndpoint({ merchantId: busy, url: `http://127.0.0.1:9/busy-${i}` }));
    await h.createEndpoint({ merchantId: other, url: "http://127.0.0.1:9/other" });
    // 10 due heads at each of the busy merchant's 3 endpoints, 10 at the other's.
    await ingestEvents(h, busy, 10);
    await ingestEvents(h, other, 10);

    // Three replicas, each with its own connections, claiming at the same moment, and again.
    const replicas = [createClaimRepository(h.pool), createClaimRepository(h.pool), createClaimRepository(h.pool)];
    const claimed: ClaimedDelivery[] = [];
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(replicas.map((replica) => replica.claimDue(options())));
      claimed.push(...results.flatMap((result) => result.claimed));
    }
    const perMerchant = countBy(claimed, (d) => d.merchantId);
    const perEndpoint = countBy(claimed, (d) => d.endpointId);
    expect(perMerchant.get(busy)).toBe(6);
    // The other merchant's single endpoint: its endpoint cap, whatever the busy merchant holds.
    expect(perMerchant.get(other)).toBe(4);
    for (const endpoint of busyEndpoints) expect(perEndpoint.get(endpoint.id) ?? 0).toBeLessThanOrEqual(4);
    expect(new Set(claimed.map((d) => d.id)).size).toBe(claimed.length);

    // Recording frees exactly the room it held, and a busy merchant is claimed for again once half of its
    // cap is free: two recorded attempts are not enough, the third is.
    const busyClaimed = claimed.filter((d) => d.merchantId === busy);
    await record(busyClaimed.slice(0, 2));
    expect((await replicas[0]!.claimDue(options())).claimed).toEqual([]);
    await record(busyClaimed.slice(2, 3));
    const next = (await Promise.all(replicas.map((replica) => replica.claimDue(options())))).flatMap((result) => result.claimed);
    expect(next.map((d) => d.merchantId)).toEqual([busy, busy, busy]);

    // The merchant is at its cap again: nothing more for it.
    expect((await replicas[0]!.claimDue(options())).claimed).toEqual([]);
    // Leases that ran out (their worker died) no longer count: three slots of room, taken again.
    const expired = busyClaimed.slice(3, 6).map((d) => d.id);
    await h.admin.query("UPDATE webhook_deliveries SET next_attempt_at = now(), claimed_until = now() WHERE id = ANY ($1)", [expired]);
    const again = (await replicas[0]!.claimDue(options())).claimed;
    expect(again.map((d) => d.merchantId)).toEqual([busy, busy, busy]);
  });

  it("does not let a busy merchant's backlog, its room coming back a few attempts at a time, fill the window ahead of another merchant's rows", async () => {
    const busy = await h.fixtures.merchant();
    const other = await h.fixtures.merchant();
    for (let i = 0; i < 2; i++) await h.createEndpoint({ merchantId: busy, url: `http://127.0.0.1:9/busy-${i}` });
    await h.createEndpoint({ merchantId: other, url: "http://127.0.0.1:9/other" });
    // 20 due heads of the busy merchant; it takes its cap of 6.
    await ingestEvents(h, busy, 10);
    const claims = createClaimRepository(h.pool);
    const held = (await claims.claimDue(options())).claimed;
    expect(held.map((d) => d.merchantId)).toEqual(Array(6).fill(busy));
    // One of its attempts is recorded (one slot of room), and then the other merchant's event arrives:
    // 14 older due rows of the busy merchant lie ahead of it, more than the window of 8.
    await record(held.slice(0, 1));
    await ingestEvents(h, other, 1);
    const next = await claims.claimDue(options({ scanLimit: 8 }));
    expect(next.claimed.map((d) => d.merchantId)).toEqual([other]);
  });

  it("gives a failing endpoint only its failing cap, counted across replicas", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoint = await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/failing" });
    await h.admin.query("UPDATE webhook_endpoints SET failing_since = now() WHERE id = $1", [endpoint.id]);
    await ingestEvents(h, merchantId, 5);
    const claims = await Promise.all([1, 2].map(() => createClaimRepository(h.pool).claimDue(options({ failingCap: 2 }))));
    expect(claims.flatMap((result) => result.claimed)).toHaveLength(2);
  });

  it("keeps another merchant's deliveries flowing while a merchant's many endpoints hang", async () => {
    const slow = await h.fixtures.merchant();
    const other = await h.fixtures.merchant();
    const held: Array<() => void> = [];
    const hanging = await h.receiver(() => new Promise((resolve) => held.push(() => resolve({ status: 200 }))));
    const healthy = await h.receiver();
    // Five endpoints of the slow merchant, all hanging; together they could take every slot.
    for (let i = 0; i < 5; i++) await h.createEndpoint({ merchantId: slow, url: `${hanging.origin}/${i}` });
    await h.createEndpoint({ merchantId: other, url: healthy.origin });
    const pipeline = h.startPipeline({
      concurrency: 8,
      perEndpointConcurrency: 4,
      perMerchantConcurrency: 4,
      pollIntervalMs: 120_000,
      requestTimeoutMs: 120_000,
    });
    try {
      for (let i = 0; i < 4; i++) await h.publish({ merchantId: slow, subscriptionId: newSubscriptionId(), version: 1 });
      await waitFor("the slow merchant's cap of requests", () => hanging.requests.length >= 4);
      const subscriptionId = newSubscriptionId();
      for (let version = 1; version <= 3; version++) await h.publish({ merchantId: other, subscriptionId, version });
      await waitFor("every version at the other merchant's endpoint", () => healthy.requests.length >= 3);
      expect(healthy.requests.map((request) => versionOf(request).version)).toEqual([1, 2, 3]);
      // Twenty deliveries owed at the slow merchant's endpoints, never more than its cap in flight.
      expect(hanging.requests).toHaveLength(4);
      const { rows } = await h.admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE merchant_id = $1 AND status = 'PENDING' AND claimed_until > now()",
        [slow],
      );
      expect(rows[0]!.n).toBe(4);
      await waitFor("the slow merchant's deliveries, released a few at a time", () => {
        held.splice(0).forEach((release) => {
          release();
        });
        return hanging.requests.length === 20 && held.length === 0;
      });
    } finally {
      held.splice(0).forEach((release) => {
        release();
      });
      await pipeline.stop();
    }
  });
});
