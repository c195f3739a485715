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
});
