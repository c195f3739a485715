import { connect, type NatsConnection } from "@nats-io/transport-node";
import { migrate } from "@subdata/db";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { ensureEventStream } from "@subdata/relay";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDatabaseBefore, type DatabaseBefore } from "../support/database-before.ts";
import { startTestRelay } from "./relay-harness.ts";
import { deleteStream, outboxRows, readStream } from "./support.ts";

// A database whose outbox held subscription events, some not yet published, before the feed existed
// and before the outbox came to reference it: after both migrations the relay publishes the pending
// ones, under their ids, as the same SubscriptionEvents it published before.

const runId = inject("runId");
const stream = { stream: `T_${runId}_outbox_migration`, subjectPrefix: `t.${runId}.outbox-migration`, replicas: 1 };
let database: DatabaseBefore;
let db: pg.Client;
let nc: NatsConnection;

beforeAll(async () => {
  database = await createDatabaseBefore("20261126000100000_change_feed");
  db = database.db;
  nc = await connect({ servers: inject("natsUrl") });
  await ensureEventStream(nc, stream);
});
afterAll(async () => {
  await deleteStream(nc, stream.stream);
  await nc?.drain();
  await database?.drop();
});

describe("the outbox's migration to referencing the feed", () => {
  it("leaves pending subscription events publishable, under their ids and with the same content", async () => {
    await db.query("INSERT INTO merchants (id, name) VALUES ('mer_old', 'Old')");
    await db.query("INSERT INTO customers (id, merchant_id, email, name) VALUES ('cus_old', 'mer_old', 'a@example.com', 'A')");
    await db.query(
      "INSERT INTO plans (id, merchant_id, name, interval, interval_count, price_minor, currency) VALUES ('plan_old', 'mer_old', 'Box', 'MONTH', 1, 100, 'USD')",
    );
    await db.query(
      `INSERT INTO subscriptions (id, merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
       VALUES ('sub_old', 'mer_old', 'cus_old', 'plan_old', 'ACTIVE', 100, 'USD', now(), now() + interval '1 month')`,
    );
    await db.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = 'sub_old'");
    await db.query("UPDATE subscriptions SET quantity = 3 WHERE id = 'sub_old'");
    const before = await db.query<{ id: string }>("SELECT id FROM event_outbox ORDER BY seq");
    // The first was published before the upgrade; the other two wait.
    await db.query("UPDATE event_outbox SET published_at = now() WHERE id = $1", [before.rows[0]!.id]);

    await migrate({ databaseUrl: database.url });

    const columns = await db.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'event_outbox' ORDER BY ordinal_position",
    );
    expect(columns.rows.map((row) => row.column_name)).toEqual(["id", "seq", "merchant_id", "resource_id", "published_at", "attempts", "last_error"]);

    const relay = startTestRelay({ databaseUrl: database.roleUrl("webhook"), nc, stream });
    try {
      expect(await relay.relay.runOnce()).toMatchObject({ claimed: 2, published: 2, failed: 0, unconvertible: 0 });
    } finally {
      await relay.close();
    }
    expect((await outboxRows(db, "mer_old")).every((row) => row.published_at !== null)).toBe(true);
    const messages = await readStream(nc, stream.stream);
    expect(messages.map((message) => message.msgId)).toEqual(before.rows.slice(1).map((row) => row.id));
    const [paused, grown] = messages.map((message) => message.subscriptionEvent!);
    expect(paused).toMatchObject({ type: EventType.SUBSCRIPTION_UPDATED, subscriptionId: "sub_old", version: 2n });
    expect(paused!.subscription).toMatchObject({ status: SubscriptionStatus.PAUSED, customer: { email: "a@example.com" } });
    expect(paused!.previous).toMatchObject({ status: SubscriptionStatus.ACTIVE, version: 1n });
    expect(paused!.changedFields?.paths).toEqual(["status", "paused_at", "updated_at"]);
    expect(grown!.previous).toMatchObject({ status: SubscriptionStatus.PAUSED, quantity: 1, version: 2n });

    // Capture goes on: a charge now reaches the outbox as well.
    await db.query(
      "INSERT INTO charges (merchant_id, subscription_id, status, amount_minor, currency, scheduled_at) VALUES ('mer_old', 'sub_old', 'PENDING', 100, 'USD', now())",
    );
    expect((await outboxRows(db, "mer_old")).map((row) => row.event_type)).toEqual([
      "subscription.created",
      "subscription.updated",
      "subscription.updated",
      "charge.created",
    ]);
  });
});
