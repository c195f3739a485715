import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures, type Fixtures } from "../support/fixtures.ts";

// Change capture for the feed, against the real schema: every committed INSERT, UPDATE and DELETE of a
// subscription, a charge or an order is exactly one change_events row, positioned at commit.

const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 6 });
let fixtures: Fixtures;

beforeAll(() => {
  fixtures = createFixtures(admin);
});
afterAll(() => admin.end());

interface FeedRow {
  position: string;
  seq: string;
  event_type: string;
  resource_type: string;
  resource_id: string;
  version: string;
  payload: { object: Record<string, unknown>; previous: Record<string, unknown> | null; changed_columns: string[] };
}

/** The merchant's feed as the query service orders it. */
async function feedOf(merchantId: string): Promise<FeedRow[]> {
  const result = await admin.query<FeedRow>(
    `SELECT c.position::text, e.seq::text, e.event_type, e.resource_type, e.resource_id, e.version::text, e.payload
       FROM change_commits c JOIN change_events e ON e.xid = c.xid AND e.merchant_id = c.merchant_id
      WHERE c.merchant_id = $1 ORDER BY c.position, e.seq`,
    [merchantId],
  );
  return result.rows;
}

const types = (rows: FeedRow[]) => rows.map((row) => `${row.event_type}@${row.version}`);

describe("change capture", () => {
  it("records one event per change of each resource, with versions the database keeps", async () => {
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const chargeId = await fixtures.charge({ merchantId, subscriptionId: subscription.id });
    await admin.query("UPDATE charges SET status = 'REFUNDED', amount_refunded_minor = amount_minor WHERE id = $1", [chargeId]);
    // A no-op update is not a change.
    await admin.query("UPDATE charges SET status = status WHERE id = $1", [chargeId]);
    await admin.query("DELETE FROM charges WHERE id = $1", [chargeId]);
    expect(types(await feedOf(merchantId))).toEqual(["subscription.created@1", "charge.created@1", "charge.updated@2", "charge.deleted@2"]);
    const updated = (await feedOf(merchantId))[2]!;
    expect(updated.payload.changed_columns).toEqual(expect.arrayContaining(["status", "amount_refunded_minor", "version"]));
    expect(updated.payload.previous).toMatchObject({ status: "SUCCEEDED", version: "1" });
    expect(updated.payload.object).toMatchObject({ status: "REFUNDED", version: "2", subscription_id: subscription.id });
  });

  it("carries an order's line items as committed, and turns a later line-item change into order.updated", async () => {
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const order = await fixtures.order({
      merchantId,
      subscriptionId: subscription.id,
      lineItems: [
        { sku: "A", unitPriceMinor: 500 },
        { sku: "B", unitPriceMinor: 700, quantity: 2 },
      ],
    });
    await admin.query("UPDATE order_line_items SET quantity = 3 WHERE order_id = $1 AND sku = 'B'", [order.id]);
    // Two items in one statement: one order.updated for the transaction.
    await admin.query("UPDATE order_line_items SET title = 'renamed' WHERE order_id = $1", [order.id]);
    const rows = (await feedOf(merchantId)).filter((row) => row.resource_id === order.id);
    expect(types(rows)).toEqual(["order.created@1", "order.updated@2", "order.updated@3"]);
    const items = (row: FeedRow) =>
      (row.payload.object.line_items as Array<{ sku: string; quantity: number; title: string }>).map((item) => `${item.sku}x${item.quantity}`);
    expect(items(rows[0]!)).toEqual(["Ax1", "Bx2"]);
    expect(items(rows[1]!)).toEqual(["Ax1", "Bx3"]);
    expect((rows[2]!.payload.object.line_items as Array<{ title: string }>).every((item) => item.title === "renamed")).toBe(true);
    const { rows: versions } = await admin.query("SELECT version::text FROM orders WHERE id = $1", [order.id]);
    expect(versions[0].version).toBe("3");
  });

  it("records deletes that cascade from a subscription, the order with its last line items", async () => {
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const chargeId = await fixtures.charge({ merchantId, subscriptionId: subscription.id });
    const order = await fixtures.order({ merchantId, subscriptionId: subscription.id, chargeId, lineItems: [{ sku: "KEEP" }] });
    await admin.query("DELETE FROM subscriptions WHERE id = $1", [subscription.id]);
    const rows = await feedOf(merchantId);
    const deletes = rows.filter((row) => row.event_type.endsWith(".deleted"));
    expect(deletes.map((row) => row.event_type).sort()).toEqual(["charge.deleted", "order.deleted", "subscription.deleted"]);
    // One transaction: one position for all three.
    expect(new Set(deletes.map((row) => row.position)).size).toBe(1);
    const orderDeleted = deletes.find((row) => row.resource_id === order.id)!;
    expect((orderDeleted.payload.object.line_items as Array<{ sku: string }>).map((item) => item.sku)).toEqual(["KEEP"]);
  });

  it("ends an order written and deleted in one transaction with its delete, whichever write came first", async () => {
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const chargeId = await fixtures.charge({ merchantId, subscriptionId: subscription.id });
    const updated = await fixtures.order({ merchantId, subscriptionId: subscription.id, chargeId, lineItems: [{ sku: "A" }] });
    const cascaded = await fixtures.order({ merchantId, subscriptionId: subscription.id, chargeId, lineItems: [{ sku: "B" }] });
    const other = await fixtures.subscription({ merchantId });
    const client = await admin.connect();
    let created: string;
    try {
      await client.query("BEGIN");
      // An update, then the delete.
      await client.query("UPDATE orders SET status = 'FULFILLED' WHERE id = $1", [updated.id]);
      await client.query("DELETE FROM orders WHERE id = $1", [updated.id]);
      // A subscription's delete: its charge goes first, setting the order's charge_id to NULL (an update), then the order.
      await client.query("DELETE FROM subscriptions WHERE id = $1", [subscription.id]);
      // An insert, then the delete.
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO orders (merchant_id, subscription_id, number, status, currency, subtotal_minor, total_minor)
         VALUES ($1, $2, 999001, 'PAID', 'USD', 100, 100) RETURNING id`,
        [merchantId, other.id],
      );
      created = inserted.rows[0]!.id;
      await client.query("DELETE FROM orders WHERE id = $1", [created]);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const rows = await feedOf(merchantId);
    const last = (id: string) => rows.filter((row) => row.resource_id === id).at(-1)?.event_type;
    expect(last(updated.id)).toBe("order.deleted");
    expect(last(cascaded.id)).toBe("order.deleted");
    expect(last(created)).toBe("order.deleted");
    // Nothing of the transaction's comes after an order's delete.
    const transaction = rows.filter((row) => row.position === rows.at(-1)!.position);
    expect(transaction.filter((row) => row.resource_type === "order" && row.event_type !== "order.deleted")).toEqual([]);
    // The cascaded order's delete still carries its line items as they were.
    const cascadedDelete = rows.find((row) => row.resource_id === cascaded.id && row.event_type === "order.deleted")!;
    expect((cascadedDelete.payload.object.line_items as Array<{ sku: string }>).map((item) => item.sku)).toEqual(["B"]);
  });

  it("gives a line item added after a no-op update of its order, in one transaction, its own order.updated", async () => {
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const order = await fixtures.order({ merchantId, subscriptionId: subscription.id, lineItems: [{ sku: "A" }] });
    const client = await admin.connect();
    try {
      await client.query("BEGIN");
      // Setting the status the order already has: the row is rewritten, its version and events are not.
      await client.query("UPDATE orders SET status = status WHERE id = $1", [order.id]);
      await client.query(
        `INSERT INTO order_line_items (order_id, position, merchant_id, sku, title, quantity, unit_price_minor, total_minor)
         VALUES ($1, 2, $2, 'B', 'B', 1, 100, 100)`,
        [order.id, merchantId],
      );
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const rows = (await feedOf(merchantId)).filter((row) => row.resource_id === order.id);
    expect(types(rows)).toEqual(["order.created@1", "order.updated@2"]);
    expect((rows[1]!.payload.object.line_items as Array<{ sku: string }>).map((item) => item.sku)).toEqual(["A", "B"]);
    // The transaction's own bookkeeping stays out of the event.
    expect(rows[1]!.payload.object).not.toHaveProperty("version_xid");
    expect(rows[1]!.payload.changed_columns).not.toContain("version_xid");
  });

  it("gives nothing to a rolled-back transaction and keeps positions gap-free per merchant", async () => {
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const client = await admin.connect();
    try {
      await client.query("BEGIN");
      await client.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [subscription.id]);
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    await admin.query("UPDATE subscriptions SET quantity = quantity + 5 WHERE id = $1", [subscription.id]);
    expect(types(await feedOf(merchantId))).toEqual(["subscription.created@1", "subscription.updated@2"]);
  });

  it("refuses to move a row to another merchant and to TRUNCATE a captured table", async () => {
    const merchantId = await fixtures.merchant();
    const other = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    const chargeId = await fixtures.charge({ merchantId, subscriptionId: subscription.id });
    await expect(admin.query("UPDATE charges SET merchant_id = $2 WHERE id = $1", [chargeId, other])).rejects.toThrow(/cannot move from merchant/);
    await expect(admin.query("UPDATE subscriptions SET merchant_id = $2 WHERE id = $1", [subscription.id, other])).rejects.toThrow(
      /cannot move from merchant|violates foreign key/,
    );
    for (const table of ["charges", "orders", "order_line_items", "subscriptions"]) {
      await expect(admin.query(`TRUNCATE ${table} CASCADE`)).rejects.toThrow(/bypass change capture/);
    }
  });

  it("orders a merchant's transactions by commit, not by when they wrote", async () => {
    const merchantId = await fixtures.merchant();
    const first = await fixtures.subscription({ merchantId });
    const second = await fixtures.subscription({ merchantId });
    const early = await admin.connect();
    try {
      // `early` writes first and commits last.
      await early.query("BEGIN");
      await early.query("UPDATE subscriptions SET quantity = 7 WHERE id = $1", [first.id]);
      await admin.query("UPDATE subscriptions SET quantity = 9 WHERE id = $1", [second.id]);
      await early.query("COMMIT");
    } finally {
      early.release();
    }
    const updates = (await feedOf(merchantId)).filter((row) => row.event_type === "subscription.updated");
    expect(updates.map((row) => row.resource_id)).toEqual([second.id, first.id]);
  });

  it("positions REPEATABLE READ and SERIALIZABLE writers of one merchant without serialization failures", async () => {
    const merchantId = await fixtures.merchant();
    const subscriptions = await Promise.all(Array.from({ length: 6 }, () => fixtures.subscription({ merchantId })));
    await Promise.all(
      subscriptions.map(async (subscription, index) => {
        const client = await admin.connect();
        try {
          await client.query(`BEGIN ISOLATION LEVEL ${index % 2 === 0 ? "REPEATABLE READ" : "SERIALIZABLE"}`);
          await client.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [subscription.id]);
          await client.query("COMMIT");
        } finally {
          client.release();
        }
      }),
    );
    const updates = (await feedOf(merchantId)).filter((row) => row.event_type === "subscription.updated");
    expect(updates).toHaveLength(6);
    expect(new Set(updates.map((row) => row.position)).size).toBe(6);
  });
});
