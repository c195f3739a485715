import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { createLogger } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { renderedEvent } from "../../services/webhook/src/ingest/event-message.ts";
import { createIngestLease } from "../../services/webhook/src/ingest/ingest-lease.ts";
import { ingestEventsFenced } from "../../services/webhook/src/ingest/ingest-repository.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, subscriptionEvent } from "./support/harness.ts";

/**
 * The ingest lease against the real table: one holder at a time, a takeover only once the lease has
 * expired (with the next epoch), and writes fenced by the epoch — a leader that lost the lease, however
 * late its statement arrives, stores nothing.
 */
describe("the ingest lease", () => {
  const h = useDeliveryHarness("ingest-lease");
  const logger = createLogger({ name: "test-lease", level: "silent" });

  const eventFor = (merchantId: string) =>
    renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent({ merchantId, subscriptionId: newSubscriptionId(), version: 1 })));
  const storedCount = async (merchantId: string) =>
    (await h.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_events WHERE merchant_id = $1", [merchantId])).rows[0]!.n;

  it("is held by one replica; another takes it over only once it expired, and the old holder's write is fenced off", async () => {
    const name = `lease-test/${newSubscriptionId()}`;
    const first = createIngestLease({ pool: h.pool, logger, retryMs: 50, ttlMs: 60_000 });
    const second = createIngestLease({ pool: h.pool, logger, retryMs: 50, ttlMs: 60_000 });
    const stop = new AbortController();
    const a = await first.acquire(name, stop.signal);
    expect(a?.epoch).toBe(1n);

    // While A's lease runs, B stands by.
    const bTrying = new AbortController();
    const bAcquired = second.acquire(name, bTrying.signal);
    const { rows: before } = await h.admin.query<{ holder: string; epoch: string }>("SELECT holder, epoch::text FROM webhook_ingest_leases WHERE name = $1", [
      name,
    ]);
    expect(before).toEqual([{ holder: expect.stringContaining(`/${process.pid}/`), epoch: "1" }]);

    // A stops renewing (as if frozen): its lease runs out, and B takes it with the next epoch.
    await h.admin.query("UPDATE webhook_ingest_leases SET expires_at = now() - interval '1 second' WHERE name = $1", [name]);
    const b = await bAcquired;
    expect(b?.epoch).toBe(2n);

    // A wakes up and writes with its epoch: nothing is stored, and A learns it lost the lease.
    const merchantId = await h.fixtures.merchant();
    const stale = await ingestEventsFenced(a!.client, [eventFor(merchantId)], { name, epoch: a!.epoch, ttlMs: 60_000 });
    expect(stale).toEqual({ renewed: false, created: 0, endpointIds: [] });
    expect(await storedCount(merchantId)).toBe(0);
    expect(await a!.confirm()).toBe(false);
    expect(a!.lost.aborted).toBe(true);

    // The new holder's write goes through and renews its lease.
    const fresh = await ingestEventsFenced(b!.client, [eventFor(merchantId)], { name, epoch: b!.epoch, ttlMs: 60_000 });
    expect(fresh.renewed).toBe(true);
    expect(await storedCount(merchantId)).toBe(1);
    expect(await b!.confirm()).toBe(true);

    // Let go on a clean stop: the next replica takes over at once, without waiting for the TTL.
    await b!.release();
    const c = await first.acquire(name, stop.signal);
    expect(c?.epoch).toBe(3n);
    await c!.release();
    await a!.release();
  });

  it("stops a leader whose lease was not renewed within its TTL by its own clock, before it writes", async () => {
    const name = `lease-test/${newSubscriptionId()}`;
    let now = 0;
    const lease = createIngestLease({ pool: h.pool, logger, retryMs: 50, ttlMs: 10_000, now: () => now });
    const held = await lease.acquire(name, new AbortController().signal);
    expect(held?.fence()).toBeDefined();
    // A freeze: the process wakes up after the TTL, before any timer ran.
    now += 10_000;
    expect(held!.fence()).toBeUndefined();
    expect(held!.lost.aborted).toBe(true);
    expect(await held!.confirm()).toBe(false);
    await held!.release();
  });
});
