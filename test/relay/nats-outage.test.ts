import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "@subdata/events";
import { ensureEventStream } from "@subdata/relay";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { startTestRelay } from "./relay-harness.ts";
import { createMerchant, createPrivateNats, createSubscription, outboxRows, type PrivateNats, readStream, waitFor } from "./support.ts";

// A private nats-server that this file stops and restarts; the shared one is never touched.
describe("the outbox relay while NATS is down", () => {
  const runId = inject("runId");
  const stream = { stream: `T_${runId}_relay_outage`, subjectPrefix: `t.${runId}.relay-outage`, replicas: 1 };
  // A relay publishes every pending row of its database: the file gets a database of its own.
  let database: TestDatabase;
  let admin: pg.Pool;
  let nats: PrivateNats;
  let nc: NatsConnection;

  beforeAll(async () => {
    database = await createTestDatabase("relay_outage");
    admin = new pg.Pool({ connectionString: database.adminUrl, max: 2 });
    nats = await createPrivateNats();
    await nats.start();
    nc = await connectNats(nats.url, "relay");
    await ensureEventStream(nc, stream);
  });

  afterAll(async () => {
    await nc?.close();
    await nats?.dispose();
    await admin?.end();
    await database?.drop();
  });

  it("keeps the events pending while NATS is down and publishes all of them, once each and in order, when it is back", async () => {
    const owner = await createMerchant(admin, "relay outage");
    const relay = startTestRelay({
      databaseUrl: database.roleUrls.webhook,
      nc,
      stream,
      pollIntervalMs: 50,
      ackTimeoutMs: 500,
    });
    relay.relay.start();
    try {
      const before = await createSubscription(admin, owner);
      await waitFor("the first event published", async () => (await outboxRows(admin, owner.merchantId)).every((row) => row.published_at));

      await nats.stop();
      await admin.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = $1", [before]);
      const during = [await createSubscription(admin, owner), await createSubscription(admin, owner)];
      for (const id of during) await admin.query("UPDATE subscriptions SET quantity = 2 WHERE id = $1", [id]);

      // Publishing is attempted and fails; nothing is marked.
      await waitFor("failed attempts recorded", async () => {
        const pending = (await outboxRows(admin, owner.merchantId)).filter((row) => row.published_at === null);
        return pending.length === 5 && pending.some((row) => row.attempts > 0 && row.last_error !== null);
      });
      expect(relay.relay.healthy).toBe(false);

      await nats.start();
      const rows = await waitFor(
        "every event published after NATS came back",
        async () => {
          const all = await outboxRows(admin, owner.merchantId);
          return all.every((row) => row.published_at !== null) && all;
        },
        60_000,
      );
      expect(rows).toHaveLength(6);
      const messages = await readStream(nc, stream.stream);
      // File storage kept what was published before the outage; dedupe dropped any buffered re-send.
      expect(messages.map((message) => message.msgId).sort()).toEqual(rows.map((row) => row.id).sort());
      for (const id of [before, ...during]) {
        const versions = messages.filter((message) => message.event.resourceId === id).map((message) => Number(message.event.version));
        expect(versions).toEqual([1, 2]);
      }
      await waitFor("the relay healthy again", async () => relay.relay.healthy);
    } finally {
      await relay.close();
    }
  });
});
