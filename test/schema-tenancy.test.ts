import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures } from "./support/fixtures.ts";

describe("tenant keys in the schema", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  let mine: { merchantId: string; customerId: string; planId: string; subscriptionId: string };
  let theirs: { merchantId: string; customerId: string; planId: string };

  beforeAll(async () => {
    const fixtures = createFixtures(admin);
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    mine = { merchantId, customerId: subscription.customerId, planId: subscription.planId, subscriptionId: subscription.id };
    const other = await fixtures.merchant();
    theirs = { merchantId: other, customerId: await fixtures.customer(other), planId: await fixtures.plan(other) };
  });

  afterAll(() => admin.end());

  it("refuses a subscription that points at another merchant's customer or plan, whoever writes it", async () => {
    await expect(admin.query("UPDATE subscriptions SET customer_id = $2 WHERE id = $1", [mine.subscriptionId, theirs.customerId])).rejects.toThrow(
      /subscriptions_customer_same_merchant/,
    );
    await expect(admin.query("UPDATE subscriptions SET plan_id = $2 WHERE id = $1", [mine.subscriptionId, theirs.planId])).rejects.toThrow(
      /subscriptions_plan_same_merchant/,
    );
  });

  it("refuses a charge or order filed under another merchant than its subscription's", async () => {
    await expect(
      admin.query(
        `INSERT INTO charges (merchant_id, subscription_id, status, amount_minor, currency, scheduled_at)
         VALUES ($1, $2, 'PENDING', 100, 'USD', now())`,
        [theirs.merchantId, mine.subscriptionId],
      ),
    ).rejects.toThrow(/charges_subscription_same_merchant/);
    await expect(
      admin.query(
        `INSERT INTO orders (merchant_id, subscription_id, number, status, currency, subtotal_minor, total_minor)
         VALUES ($1, $2, 999999, 'PAID', 'USD', 100, 100)`,
        [theirs.merchantId, mine.subscriptionId],
      ),
    ).rejects.toThrow(/orders_subscription_same_merchant/);
  });

  it("refuses an UPDATE or upsert that moves a subscription, charge or order to another merchant", async () => {
    const fixtures = createFixtures(admin);
    const subscription = await fixtures.subscription({ merchantId: mine.merchantId });
    const charge = await admin.query<{ id: string }>(
      `INSERT INTO charges (merchant_id, subscription_id, status, amount_minor, currency, scheduled_at)
       VALUES ($1, $2, 'PENDING', 100, 'USD', now()) RETURNING id`,
      [mine.merchantId, subscription.id],
    );
    const order = await admin.query<{ id: string }>(
      `INSERT INTO orders (merchant_id, subscription_id, number, status, currency, subtotal_minor, total_minor)
       VALUES ($1, $2, 424242, 'PAID', 'USD', 100, 100) RETURNING id`,
      [mine.merchantId, subscription.id],
    );
    const rows = { subscriptions: subscription.id, charges: charge.rows[0]?.id, orders: order.rows[0]?.id };
    for (const [table, id] of Object.entries(rows)) {
      // Direct SQL as the superuser: no foreign key or role stands in the way, only the trigger.
      await expect(admin.query(`UPDATE ${table} SET merchant_id = $2 WHERE id = $1`, [id, theirs.merchantId])).rejects.toThrow(
        new RegExp(`${table} ${id} cannot move from merchant ${mine.merchantId} to ${theirs.merchantId}`),
      );
      await expect(
        admin.query(`INSERT INTO ${table} SELECT * FROM ${table} WHERE id = $1 ON CONFLICT (id) DO UPDATE SET merchant_id = $2`, [id, theirs.merchantId]),
      ).rejects.toThrow(/cannot move from merchant/);
      const stored = await admin.query<{ merchant_id: string }>(`SELECT merchant_id FROM ${table} WHERE id = $1`, [id]);
      expect(stored.rows).toEqual([{ merchant_id: mine.merchantId }]);
    }
    // Writing the same merchant again is not a move.
    await expect(admin.query("UPDATE subscriptions SET merchant_id = merchant_id WHERE id = $1", [subscription.id])).resolves.toMatchObject({ rowCount: 1 });
  });
});
