import { jetstreamManager } from "@nats-io/jetstream";
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { ChargeStatus, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { createLogger } from "@subdata/runtime";
import { createCommitWatchPool, createCommitWatcher, eventSubject } from "@subdata/events";
import { createEventPublisher, createOutboxListener, ensureEventStream } from "@subdata/relay";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { createFixtures } from "../support/fixtures.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { crashBeforeMark, startTestRelay, type TestRelay } from "./relay-harness.ts";
import { createMerchant, createSubscription, deleteStream, outboxRows, readStream, waitFor } from "./support.ts";

describe("the outbox relay", () => {
  const runId = inject("runId");
  const stream = { stream: `T_${runId}_relay`, subjectPrefix: `t.${runId}.relay`, replicas: 1 };
  // A relay publishes every pending row of its database: each test gets a database of its own.
  let database: TestDatabase;
  let webhookUrl: string;
  let admin: pg.Pool;
  let nc: NatsConnection;
  const relays: TestRelay[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: inject("natsUrl") });
    await ensureEventStream(nc, stream);
  });

  beforeEach(async () => {
    database = await createTestDatabase("relay");
    webhookUrl = database.roleUrls.webhook;
    admin = new pg.Pool({ connectionString: database.adminUrl, max: 8 });
  });

  afterEach(async () => {
    for (const relay of relays.splice(0)) await relay.close();
    await admin.end();
    await database.drop();
  });

  afterAll(async () => {
    await deleteStream(nc, stream.stream);
    await nc.drain();
  });

  function relayFor(extra: Partial<Parameters<typeof startTestRelay>[0]> = {}): TestRelay {
    const relay = startTestRelay({ databaseUrl: webhookUrl, nc, stream, ...extra });
    relays.push(relay);
    return relay;
  }

  async function allPublished(merchantId: string): Promise<boolean> {
    const rows = await outboxRows(admin, merchantId);
    return rows.length > 0 && rows.every((row) => row.published_at !== null);
  }

  async function messagesOf(merchantId: string) {
    return (await readStream(nc, stream.stream)).filter((message) => message.event.merchantId === merchantId);
  }

  it("sets the stream up for dedupe and durability", async () => {
    const info = await (await jetstreamManager(nc)).streams.info(stream.stream);
    expect(info.config).toMatchObject({
      subjects: [`${stream.subjectPrefix}.>`],
      storage: "file",
      retention: "limits",
      discard: "new",
      duplicate_window: nanos(2 * 60 * 60 * 1000),
      max_age: nanos(7 * 24 * 60 * 60 * 1000),
    });
    // Running it again (every relay start does) is harmless.
    await ensureEventStream(nc, stream);
  });

  it("publishes every change once, with Nats-Msg-Id = event id, as a SubscriptionEvent", async () => {
    const owner = await createMerchant(admin, "relay publish");
    const subscriptionId = await createSubscription(admin, owner);
    await admin.query("UPDATE subscriptions SET status = 'CANCELLED', cancelled_at = now(), cancellation_reason = 'moved' WHERE id = $1", [subscriptionId]);
    await admin.query("DELETE FROM subscriptions WHERE id = $1", [subscriptionId]);
    const { relay } = relayFor();
    relay.start();
    await waitFor("all events published", () => allPublished(owner.merchantId));

    const rows = await outboxRows(admin, owner.merchantId);
    const messages = await messagesOf(owner.merchantId);
    expect(messages.map((message) => message.msgId)).toEqual(rows.map((row) => row.id));
    expect(messages.map((message) => message.event.id)).toEqual(rows.map((row) => row.id));
    for (const message of messages) expect(message.subject).toBe(eventSubject(stream.subjectPrefix, "subscription", owner.merchantId));
    expect(messages.map((message) => [message.event.type, message.event.version])).toEqual([
      [EventType.SUBSCRIPTION_CREATED, 1n],
      [EventType.SUBSCRIPTION_UPDATED, 2n],
      [EventType.SUBSCRIPTION_DELETED, 2n],
    ]);
    const updated = messages[1]!.subscriptionEvent!;
    expect(updated.subscription).toMatchObject({
      id: subscriptionId,
      status: SubscriptionStatus.CANCELLED,
      cancellationReason: "moved",
      price: { amountMinor: 1999n, currencyCode: "USD" },
      customer: { id: owner.customerId, email: "ada@example.com" },
    });
    expect(updated.previous?.status).toBe(SubscriptionStatus.ACTIVE);
    expect(updated.changedFields?.paths).toEqual(["status", "cancelled_at", "cancellation_reason", "updated_at"]);
  });

  /** A subscription with a charge that succeeds, and an order (two line items) of that charge. */
  async function chargeAndOrder(name: string) {
    const owner = await createMerchant(admin, name);
    const subscriptionId = await createSubscription(admin, owner);
    const fixtures = createFixtures(admin);
    const chargeId = await fixtures.charge({ merchantId: owner.merchantId, subscriptionId, status: "PENDING" });
    await admin.query("UPDATE charges SET status = 'SUCCEEDED', processed_at = now() WHERE id = $1", [chargeId]);
    const order = await fixtures.order({
      merchantId: owner.merchantId,
      subscriptionId,
      chargeId,
      lineItems: [{ sku: "BEANS", quantity: 2, unitPriceMinor: 900 }, { sku: "MUG" }],
    });
    return { owner, subscriptionId, chargeId, orderId: order.id };
  }

  it("publishes charge and order changes as ChangeEvents on their own subjects, with Nats-Msg-Id = event id", async () => {
    const { owner, subscriptionId, chargeId, orderId } = await chargeAndOrder("relay charges");
    const { relay } = relayFor();
    relay.start();
    await waitFor("all events published", () => allPublished(owner.merchantId));

    const rows = await outboxRows(admin, owner.merchantId);
    const published = await messagesOf(owner.merchantId);
    // One message per event, each under its event id; different resources go out concurrently, so the
    // stream orders events only within a resource.
    expect(published.map((message) => message.msgId).sort()).toEqual(rows.map((row) => row.id).sort());
    const messages = rows.map((row) => published.find((message) => message.msgId === row.id)!);
    for (const message of messages) expect(message.event.id).toBe(message.msgId);
    expect(published.filter((message) => message.event.resourceId === chargeId).map((message) => message.event.version)).toEqual([1n, 2n]);
    expect(messages.map((message) => [message.subject, message.event.type, message.event.resourceId, message.event.version])).toEqual([
      [eventSubject(stream.subjectPrefix, "subscription", owner.merchantId), EventType.SUBSCRIPTION_CREATED, subscriptionId, 1n],
      [eventSubject(stream.subjectPrefix, "charge", owner.merchantId), EventType.CHARGE_CREATED, chargeId, 1n],
      [eventSubject(stream.subjectPrefix, "charge", owner.merchantId), EventType.CHARGE_UPDATED, chargeId, 2n],
      [eventSubject(stream.subjectPrefix, "order", owner.merchantId), EventType.ORDER_CREATED, orderId, 1n],
    ]);
    const [, , chargeUpdated, orderCreated] = messages.map((message) => message.event);
    expect(chargeUpdated!.object).toMatchObject({ case: "charge", value: { id: chargeId, status: ChargeStatus.SUCCEEDED } });
    expect(chargeUpdated!.previous).toMatchObject({ case: "previousCharge", value: { status: ChargeStatus.PENDING } });
    expect(chargeUpdated!.changedFields?.paths).toEqual(["status", "processed_at"]);
    expect(orderCreated!.object.case).toBe("order");
    expect(orderCreated!.object.value).toMatchObject({
      id: orderId,
      chargeId,
      lineItems: [
        { sku: "BEANS", quantity: 2, total: { amountMinor: 1800n } },
        { sku: "MUG", quantity: 1 },
      ],
    });
  });

  it("when it dies between publishing charge and order events and marking them, the re-publish is deduplicated", async () => {
    const { owner } = await chargeAndOrder("relay crash charges");
    const crashing = relayFor({
      wrapRepository: (repository) =>
        crashBeforeMark(repository, () => {
          throw new Error("killed before marking");
        }),
    });
    await expect(crashing.relay.runOnce()).rejects.toThrow(/killed before marking/);
    expect(await messagesOf(owner.merchantId)).toHaveLength(4);
    expect((await outboxRows(admin, owner.merchantId)).every((row) => row.published_at === null)).toBe(true);

    const healthy = relayFor();
    expect(await healthy.relay.runOnce()).toMatchObject({ claimed: 4, published: 4, failed: 0 });
    const rows = await outboxRows(admin, owner.merchantId);
    expect(rows.every((row) => row.published_at !== null)).toBe(true);
    expect(rows.map((row) => row.resource_type)).toEqual(["subscription", "charge", "charge", "order"]);
    expect((await messagesOf(owner.merchantId)).map((message) => message.msgId).sort()).toEqual(rows.map((row) => row.id).sort());
  });

  it("wakes on a commit: a change made while it runs is published without another start", async () => {
    const owner = await createMerchant(admin, "relay wake");
    // A poll interval far beyond the test timeout: only the commit watch can wake it in time.
    const running = relayFor({ pollIntervalMs: 10 * 60 * 1000 });
    const logger = createLogger({ name: "watch-test", level: "silent" });
    const watchPool = createCommitWatchPool({ connectionString: webhookUrl, applicationName: "relay-watch-test", logger });
    const reported = new Set<string>();
    const watcher = createCommitWatcher({
      db: watchPool,
      logger,
      intervalMs: 10,
      onCommits: (merchantIds) => {
        for (const merchantId of merchantIds) reported.add(merchantId);
        running.relay.wake();
      },
      onUnknown: () => running.relay.wake(),
    });
    running.relay.start();
    try {
      // The watch's first look wakes the relay, which finds nothing yet.
      await watcher.poll();
      watcher.start();
      await createSubscription(admin, owner);
      await waitFor("the created event published", () => allPublished(owner.merchantId));
      // Published because the watch reported the owner's commit.
      expect(reported.has(owner.merchantId)).toBe(true);
    } finally {
      await watcher.close();
      await watchPool.end();
    }
  });

  it("still wakes on NOTIFY subdata_outbox, which the webhook service sends when it hands events back", async () => {
    const owner = await createMerchant(admin, "relay notify");
    const running = relayFor({ pollIntervalMs: 10 * 60 * 1000 });
    running.relay.start();
    // Wakes pass to the relay only once the row is written: the listener's start-up wake cannot
    // publish it, and the relay's own poll is ten minutes away, so only the notification below can.
    let armed = false;
    const listener = createOutboxListener({
      connectionString: webhookUrl,
      logger: createLogger({ name: "listener-test", level: "silent" }),
      onWake: () => {
        if (armed) running.relay.wake();
      },
    });
    listener.start();
    try {
      await waitFor("the listener listening", async () => {
        const { rows } = await admin.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'subdata-relay-listen' AND query LIKE 'LISTEN%'",
        );
        return rows.length > 0;
      });
      await createSubscription(admin, owner);
      armed = true;
      await admin.query("SELECT pg_notify('subdata_outbox', '')");
      await waitFor("the created event published", () => allPublished(owner.merchantId));
    } finally {
      await listener.close();
    }
  });

  it("keeps each subscription's versions in order under a burst, with two relays and small batches", async () => {
    await expectOrderUnderBurst("relay burst", () => [relayFor({ batchSize: 7, pollIntervalMs: 20 }), relayFor({ batchSize: 5, pollIntervalMs: 20 })]);
  });

  it("keeps each subscription's versions in order under a burst, with one relay running three rounds at once", async () => {
    await expectOrderUnderBurst("relay rounds", () => [relayFor({ batchSize: 4, rounds: 3, pollIntervalMs: 20 })]);
  });

  async function expectOrderUnderBurst(name: string, relaysFor: () => TestRelay[]): Promise<void> {
    const owner = await createMerchant(admin, name);
    const subscriptionIds = await Promise.all(Array.from({ length: 6 }, () => createSubscription(admin, owner)));
    const updatesEach = 30;
    const burst = (count: number) =>
      Promise.all(
        subscriptionIds.map(async (id) => {
          for (let i = 0; i < count; i += 1) await admin.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [id]);
        }),
      );
    // A backlog first, so that both relays start on rows of the same subscriptions at once...
    await burst(updatesEach / 2);
    for (const { relay } of relaysFor()) relay.start();
    // ...then writers on several connections while the relays (or rounds) claim.
    await burst(updatesEach / 2);
    await waitFor("all burst events published", async () => {
      const rows = await outboxRows(admin, owner.merchantId);
      return rows.length === subscriptionIds.length * (updatesEach + 1) && rows.every((row) => row.published_at !== null);
    });

    const messages = await messagesOf(owner.merchantId);
    expect(messages).toHaveLength(subscriptionIds.length * (updatesEach + 1));
    expect(new Set(messages.map((message) => message.msgId)).size).toBe(messages.length);
    for (const id of subscriptionIds) {
      const versions = messages.filter((message) => message.event.resourceId === id).map((message) => Number(message.event.version));
      expect(versions).toEqual(Array.from({ length: updatesEach + 1 }, (_, i) => i + 1));
    }
  }

  it("when it dies between publish and mark, the re-publish is deduplicated: one message per event", async () => {
    const owner = await createMerchant(admin, "relay crash");
    const subscriptionId = await createSubscription(admin, owner);
    await admin.query("UPDATE subscriptions SET status = 'PAST_DUE' WHERE id = $1", [subscriptionId]);
    const crashing = relayFor({
      wrapRepository: (repository) =>
        crashBeforeMark(repository, () => {
          throw new Error("killed before marking");
        }),
    });
    await expect(crashing.relay.runOnce()).rejects.toThrow(/killed before marking/);
    // Published, yet still pending in Postgres.
    expect(await messagesOf(owner.merchantId)).toHaveLength(2);
    expect((await outboxRows(admin, owner.merchantId)).every((row) => row.published_at === null)).toBe(true);

    const healthy = relayFor();
    expect(await healthy.relay.runOnce()).toMatchObject({ claimed: 2, published: 2, failed: 0 });
    const rows = await outboxRows(admin, owner.merchantId);
    expect(rows.every((row) => row.published_at !== null)).toBe(true);
    const messages = await messagesOf(owner.merchantId);
    expect(messages.map((message) => message.msgId)).toEqual(rows.map((row) => row.id));
  });

  it("recreates a deleted stream before the next publish", async () => {
    const own = { stream: `T_${runId}_relay_recreate`, subjectPrefix: `t.${runId}.relay-recreate`, replicas: 1 };
    await ensureEventStream(nc, own);
    await deleteStream(nc, own.stream);
    const publisher = createEventPublisher(nc, { ...own, ackTimeoutMs: 2_000 });
    const event = {
      id: `evt_${runId}recreate`,
      type: "subscription.created",
      resourceType: "subscription" as const,
      merchantId: "mer_recreate",
      data: new Uint8Array([1]),
    };
    await expect(publisher.publish(event)).rejects.toThrow();
    try {
      expect(await publisher.publish(event)).toEqual({ seq: 1, duplicate: false });
      expect(await publisher.publish(event)).toEqual({ seq: 1, duplicate: true });
    } finally {
      await deleteStream(nc, own.stream);
    }
  });

  it("keeps running, backing off, while Postgres is unreachable", async () => {
    const lines: string[] = [];
    const logger = createLogger({ name: "relay-test", level: "warn", destination: { write: (line: string) => void lines.push(line) } });
    const unreachable = new URL(webhookUrl);
    unreachable.port = "1";
    const broken = relayFor({ databaseUrl: unreachable.toString(), logger });
    broken.relay.start();
    await waitFor("two failed rounds", async () => lines.filter((line) => line.includes("outbox round failed")).length >= 2);
    expect(broken.relay.healthy).toBe(false);
  });
});
