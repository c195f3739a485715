import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { describe, expect, it } from "vitest";
import { DELIVERY_CHANNEL, endpointsOfWakeup } from "../../services/webhook/src/delivery/delivery-wakeups.ts";
import { renderedEvent } from "../../services/webhook/src/ingest/event-message.ts";
import { ingestEventsFenced } from "../../services/webhook/src/ingest/ingest-repository.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { recordingQueryable } from "../support/recording-queryable.ts";
import { newSubscriptionId, subscriptionEvent, waitFor } from "./support/harness.ts";

/**
 * Ingest's wake-ups name the endpoints of the deliveries it created, in its result (the worker in the
 * same process) and in the NOTIFY payload (every replica's), so a worker holding back claims for a
 * busy endpoint is not sent walking that endpoint's due rows again by rows of the same endpoint.
 */
describe("ingest's wake-ups", () => {
  const h = useDeliveryHarness("wakeups");

  /** A lease row of the test's own, epoch 1, to fence ingest with as the leader does. */
  async function ownLease() {
    const lease = { name: `wakeups/${newSubscriptionId()}`, epoch: 1n, ttlMs: 60_000 };
    await h.admin.query("INSERT INTO webhook_ingest_leases (name, holder, epoch, expires_at) VALUES ($1, 'test', 1, now() + interval '1 minute')", [
      lease.name,
    ]);
    return lease;
  }

  /**
   * Stores `count` events of new subscriptions of the merchant as the ingest leader does; returns what
   * ingest said, the NOTIFY payload that followed and the statements ingest sent, in order.
   */
  async function storeAndListen(merchantId: string, count: number) {
    const listener = await h.admin.connect();
    const payloads: string[] = [];
    listener.on("notification", (message) => {
      if (message.channel === DELIVERY_CHANNEL) payloads.push(message.payload ?? "");
    });
    try {
      await listener.query(`LISTEN ${DELIVERY_CHANNEL}`);
      const events = Array.from({ length: count }, () =>
        renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent({ merchantId, subscriptionId: newSubscriptionId(), version: 1 }))),
      );
      const statements: string[] = [];
      const stored = await ingestEventsFenced(recordingQueryable(h.pool, statements), events, await ownLease());
      await waitFor("the batch's notification", () => payloads.length > 0);
      return { stored, payload: payloads[0]!, statements };
    } finally {
      await listener.query(`UNLISTEN ${DELIVERY_CHANNEL}`);
      listener.release();
    }
  }

  it("name the endpoints of the deliveries created, once each, in the result and in the NOTIFY payload", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoints = [
      await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/a" }),
      await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/b" }),
    ];
    const { stored, payload } = await storeAndListen(merchantId, 3);
    const ids = endpoints.map((endpoint) => endpoint.id).sort();
    expect(stored).toMatchObject({ renewed: true, created: 6 });
    expect([...stored.endpointIds].sort()).toEqual(ids);
    expect(endpointsOfWakeup(payload)?.sort()).toEqual(ids);
  });

  it("are sent after the rows committed, in a transaction of their own that does not wait for its WAL flush", async () => {
    // Postgres holds one database-wide lock from a notifying transaction's commit record until it is
    // flushed: in the insert's transaction, every batch would commit in turn with every captured write.
    const merchantId = await h.fixtures.merchant();
    await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/a" });
    const { stored, statements } = await storeAndListen(merchantId, 2);
    expect(stored.created).toBe(2);
    expect(statements).toHaveLength(2);
    expect(statements[0]).toContain("INSERT INTO webhook_deliveries");
    expect(statements[0]).not.toMatch(/notify/i);
    expect(statements[1]).toMatch(/set_config\('synchronous_commit', 'off', true\).*pg_notify/s);
  });

  it("are not sent when the batch created no delivery", async () => {
    const merchantId = await h.fixtures.merchant();
    const statements: string[] = [];
    const lease = await ownLease();
    const event = renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent({ merchantId, subscriptionId: newSubscriptionId(), version: 1 })));
    // No endpoint: nothing to deliver, so nothing to wake anyone for.
    expect(await ingestEventsFenced(recordingQueryable(h.pool, statements), [event], lease)).toMatchObject({ renewed: true, created: 0, endpointIds: [] });
    expect(statements).toHaveLength(1);
  });

  it("name none in the payload beyond 100 endpoints (it holds 8,000 bytes), which wakes workers for any endpoint", async () => {
    const merchantId = await h.fixtures.merchant();
    for (let i = 0; i < 101; i++) await h.createEndpoint({ merchantId, url: `http://127.0.0.1:9/${i}` });
    const { stored, payload } = await storeAndListen(merchantId, 1);
    expect(stored.endpointIds).toHaveLength(101);
    expect(payload).toBe("");
    expect(endpointsOfWakeup(payload)).toBeUndefined();
  });
});
