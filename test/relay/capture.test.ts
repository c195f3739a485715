import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestDatabase } from "../support/test-database.ts";
import { createMerchant, createSubscription, outboxRows } from "./support.ts";

// Change capture in Postgres: every real change of a subscription, charge or order row, by any writer,
// leaves exactly one event_outbox row in the same transaction, with the id of its change_events row.
describe("subscription change capture", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 3 });
  const asWebhook = new pg.Pool({ connectionString: inject("roleDatabaseUrls").webhook, max: 1 });
  const writerRole = `relay_writer_${inject("runId")}`;

  beforeAll(async () => {
    // Another writer: a role that may write subscriptions and has no privilege at all on the outbox.
    await admin.query(`CREATE ROLE ${writerRole} NOLOGIN`);
    await admin.query(`GRANT SELECT ON merchants, customers, plans TO ${writerRole}`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON subscriptions TO ${writerRole}`);
  });

  afterAll(async () => {
    await admin.query(`DROP OWNED BY ${writerRole}`);
    await admin.query(`DROP ROLE ${writerRole}`);
    await asWebhook.end();
    await admin.end();
  });

  it("records a created event with a snapshot joined with customer and plan", async () => {
    const owner = await createMerchant(admin, "capture create");
    const subscriptionId = await createSubscription(admin, owner);
    const rows = await outboxRows(admin, owner.merchantId);
    expect(rows).toHaveLength(1);
    const [created] = rows;
    expect(created).toMatchObject({ resource_id: subscriptionId, event_type: "subscription.created", version: "1", published_at: null, attempts: 0 });
    expect(created!.id).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(created!.payload.previous).toBeNull();
    expect(created!.payload.object).toMatchObject({
      id: subscriptionId,
      status: "ACTIVE",
      price_minor: "1999",
      version: "1",
      customer: { id: owner.customerId, email: "ada@example.com", name: "Ada" },
      plan: { id: owner.planId, name: "Box", interval: "MONTH", interval_count: 1 },
    });
  });

  it("records an updated event with the previous row and the changed columns, and nothing for a no-op UPDATE", async () => {
    const owner = await createMerchant(admin, "capture update");
    const subscriptionId = await createSubscription(admin, owner);
    await admin.query("UPDATE subscriptions SET status = 'CANCELLED', cancelled_at = now() WHERE id = $1", [subscriptionId]);
    await admin.query("UPDATE subscriptions SET status = status, quantity = quantity WHERE id = $1", [subscriptionId]);
    const rows = await outboxRows(admin, owner.merchantId);
    expect(rows.map((row) => [row.event_type, row.version])).toEqual([
      ["subscription.created", "1"],
      ["subscription.updated", "2"],
    ]);
    const updated = rows[1]!;
    expect(updated.payload.changed_columns).toEqual(["cancelled_at", "status", "updated_at", "version"]);
    expect(updated.payload.object).toMatchObject({ status: "CANCELLED", version: "2" });
    expect(updated.payload.previous).toMatchObject({ status: "ACTIVE", version: "1", cancelled_at: null });
  });

  it("records charges and orders too: one outbox row per change, under the id of its change_events row", async () => {
    const owner = await createMerchant(admin, "capture charge order");
    const subscriptionId = await createSubscription(admin, owner);
    const charge = await admin.query<{ id: string }>(
      `INSERT INTO charges (merchant_id, subscription_id, status, amount_minor, currency, scheduled_at)
       VALUES ($1, $2, 'PENDING', 1999, 'USD', now()) RETURNING id`,
      [owner.merchantId, subscriptionId],
    );
    const chargeId = charge.rows[0]!.id;
    await admin.query("UPDATE charges SET status = 'SUCCEEDED', processed_at = now() WHERE id = $1", [chargeId]);
    const client = await admin.connect();
    let orderId: string;
    try {
      await client.query("BEGIN");
      const order = await client.query<{ id: string }>(
        `INSERT INTO orders (merchant_id, subscription_id, charge_id, number, status, currency, subtotal_minor, total_minor)
         VALUES ($1, $2, $3, 1, 'PAID', 'USD', 1999, 1999) RETURNING id`,
        [owner.merchantId, subscriptionId, chargeId],
      );
      orderId = order.rows[0]!.id;
      await client.query(
        `INSERT INTO order_line_items (merchant_id, order_id, position, sku, title, quantity, unit_price_minor, total_minor)
         VALUES ($1, $2, 1, 'BOX', 'Box', 1, 1999, 1999)`,
        [owner.merchantId, orderId],
      );
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const rows = await outboxRows(admin, owner.merchantId);
    expect(rows.map((row) => [row.resource_type, row.resource_id, row.event_type, row.version])).toEqual([
      ["subscription", subscriptionId, "subscription.created", "1"],
      ["charge", chargeId, "charge.created", "1"],
      ["charge", chargeId, "charge.updated", "2"],
      ["order", orderId, "order.created", "1"],
    ]);
    expect(rows.every((row) => row.published_at === null && row.attempts === 0)).toBe(true);
    expect(rows[3]!.payload.object).toMatchObject({ id: orderId, line_items: [{ sku: "BOX", quantity: 1 }] });
  });

  it("writes timestamps in UTC whatever the writer's TimeZone", async () => {
    const owner = await createMerchant(admin, "capture timezone");
    const client = await admin.connect();
    try {
      await client.query("SET TimeZone = 'Asia/Kolkata'");
      await createSubscription(client, owner);
    } finally {
      await client.query("RESET TimeZone");
      client.release();
    }
    const [created] = await outboxRows(admin, owner.merchantId);
    expect(created!.payload.object.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$/);
  });

  it("records one event per row of a multi-row UPDATE, and a deleted event with the last version", async () => {
    const owner = await createMerchant(admin, "capture multi");
    const ids = [await createSubscription(admin, owner), await createSubscription(admin, owner), await createSubscription(admin, owner)];
    await admin.query("UPDATE subscriptions SET quantity = 3 WHERE merchant_id = $1", [owner.merchantId]);
    await admin.query("DELETE FROM subscriptions WHERE id = $1", [ids[0]]);
    const rows = await outboxRows(admin, owner.merchantId);
    expect(
      rows
        .filter((row) => row.event_type === "subscription.updated")
        .map((row) => row.resource_id)
        .sort(),
    ).toEqual([...ids].sort());
    const deleted = rows.filter((row) => row.event_type === "subscription.deleted");
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatchObject({ resource_id: ids[0], version: "2" });
    expect(deleted[0]!.payload.object).toMatchObject({ id: ids[0], quantity: 3 });
  });

  it("captures the changes of another role that has no privilege on the outbox", async () => {
    const owner = await createMerchant(admin, "capture other role");
    const client = await admin.connect();
    let subscriptionId: string;
    try {
      await client.query("BEGIN");
      await client.query(`SET LOCAL ROLE ${writerRole}`);
      subscriptionId = await createSubscription(client, owner);
      await client.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = $1", [subscriptionId]);
      await expect(client.query("SELECT 1 FROM event_outbox LIMIT 1")).rejects.toThrow(/permission denied/);
      await client.query("ROLLBACK");
      // Once more, committed this time.
      await client.query("BEGIN");
      await client.query(`SET LOCAL ROLE ${writerRole}`);
      subscriptionId = await createSubscription(client, owner);
      await client.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = $1", [subscriptionId]);
      await client.query("DELETE FROM subscriptions WHERE id = $1", [subscriptionId]);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    // The rolled-back transaction left nothing; the committed one left exactly its three changes.
    const rows = await outboxRows(admin, owner.merchantId);
    expect(rows.map((row) => [row.resource_id, row.event_type, row.version])).toEqual([
      [subscriptionId, "subscription.created", "1"],
      [subscriptionId, "subscription.updated", "2"],
      [subscriptionId, "subscription.deleted", "2"],
    ]);
  });

  it("sends no notification from the writer's transaction: captured writes never take Postgres's notify lock", async () => {
    // A database of its own: notifications are per database, and nothing else may send any there.
    const database = await createTestDatabase("capture notify");
    const own = new pg.Pool({ connectionString: database.adminUrl, max: 1 });
    const owner = await createMerchant(own, "capture notify");
    const listener = new pg.Client({ connectionString: database.adminUrl });
    await listener.connect();
    const writer = await own.connect();
    try {
      const heard: string[] = [];
      const sentinelHeard = new Promise<void>((resolve) =>
        listener.on("notification", (message) => {
          heard.push(message.channel);
          if (message.channel === "capture_test_sentinel") resolve();
        }),
      );
      for (const channel of ["subdata_outbox", "subdata_changes", "capture_test_sentinel"]) await listener.query(`LISTEN ${channel}`);
      const subscriptionId = await createSubscription(writer, owner);
      await writer.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [subscriptionId]);
      // Notifications reach a listener in commit order: once the sentinel, sent after both writes
      // committed, has arrived, any notification of theirs would have arrived before it.
      await writer.query("SELECT pg_notify('capture_test_sentinel', '')");
      await sentinelHeard;
      expect(heard).toEqual(["capture_test_sentinel"]);
      expect((await outboxRows(writer, owner.merchantId)).map((row) => row.event_type)).toEqual(["subscription.created", "subscription.updated"]);
    } finally {
      writer.release();
      await listener.end();
      await own.end();
      await database.drop();
    }
  });

  it("refuses TRUNCATE, which would change subscriptions without events", async () => {
    // Checked in the catalog: actually truncating (CASCADE) would lock the tables other files use.
    const trigger = await admin.query(
      `SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'subscriptions'::regclass AND tgname = 'subscriptions_refuse_truncate'
          AND tgtype & 32 <> 0`,
    );
    expect(trigger.rows).toEqual([{ tgenabled: "O" }]);
  });

  it("lets the relay role read and mark the outbox, and nothing more", async () => {
    const owner = await createMerchant(admin, "capture grants");
    await createSubscription(admin, owner);
    const [row] = await outboxRows(admin, owner.merchantId);
    const read = await asWebhook.query("SELECT id FROM event_outbox WHERE id = $1", [row!.id]);
    expect(read.rowCount).toBe(1);
    await asWebhook.query("UPDATE event_outbox SET attempts = attempts + 1, last_error = 'x' WHERE id = $1", [row!.id]);
    await expect(asWebhook.query("UPDATE event_outbox SET resource_id = 'sub_x' WHERE id = $1", [row!.id])).rejects.toThrow(/permission denied/);
    await expect(asWebhook.query("DELETE FROM event_outbox WHERE id = $1", [row!.id])).rejects.toThrow(/permission denied/);
    await expect(asWebhook.query("INSERT INTO event_outbox (id, merchant_id, resource_id) VALUES ($1 || 'x', 'm', 's')", [row!.id])).rejects.toThrow(
      /permission denied/,
    );
    // It reads the events it publishes, and may not change them.
    expect((await asWebhook.query("SELECT id FROM change_events WHERE id = $1", [row!.id])).rowCount).toBe(1);
    await expect(asWebhook.query("UPDATE change_events SET version = 9 WHERE id = $1", [row!.id])).rejects.toThrow(/permission denied/);
    // The purge function removes only published rows older than the retention, never pending ones.
    await asWebhook.query("SELECT subdata_purge_published_events(interval '1 day', 1000)");
    expect((await outboxRows(admin, owner.merchantId))[0]).toMatchObject({ id: row!.id, published_at: null });
    await expect(asWebhook.query("SELECT subdata_purge_published_events(interval '1 second', 1000)")).rejects.toThrow(/at least 1 hour/);
  });

  it("purges published rows once they are older than the retention", async () => {
    const owner = await createMerchant(admin, "capture purge");
    const subscriptionId = await createSubscription(admin, owner);
    await admin.query("UPDATE subscriptions SET quantity = 2 WHERE id = $1", [subscriptionId]);
    const [old, recent] = await outboxRows(admin, owner.merchantId);
    await admin.query("UPDATE event_outbox SET published_at = now() - interval '8 days' WHERE id = $1", [old!.id]);
    await admin.query("UPDATE event_outbox SET published_at = now() - interval '6 days' WHERE id = $1", [recent!.id]);
    await asWebhook.query("SELECT subdata_purge_published_events(interval '7 days', 1000)");
    expect((await outboxRows(admin, owner.merchantId)).map((row) => row.id)).toEqual([recent!.id]);
  });
});
