import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { json, runCli } from "./run-cli.ts";

interface SeedOutput {
  merchantId: string;
  merchantCreated: boolean;
  salt: string;
  counts: { plans: number; customers: number; subscriptions: number; charges: number; orders: number; lineItems: number };
}

const TABLES = ["plans", "customers", "subscriptions", "charges", "orders", "order_line_items"] as const;

function freshMerchantId(): string {
  return `mer_clitest_${randomBytes(6).toString("hex")}`;
}

describe("subdata seed", () => {
  const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl"), options: "-c TimeZone=UTC" });
  const env = { DATABASE_URL: inject("adminDatabaseUrl") };

  beforeAll(() => admin.connect());
  afterAll(() => admin.end());

  /** Every row of the merchant, table by table, as id → the row's full text. */
  async function snapshot(merchantId: string): Promise<Record<string, Map<string, string>>> {
    const result: Record<string, Map<string, string>> = {};
    for (const table of TABLES) {
      const key = table === "order_line_items" ? "order_id || ':' || position" : "id";
      const rows = await admin.query<{ key: string; row: string }>(`SELECT ${key} AS key, t::text AS row FROM ${table} t WHERE merchant_id = $1`, [merchantId]);
      result[table] = new Map(rows.rows.map((r) => [r.key, r.row]));
    }
    return result;
  }

  it("adds rows on a re-run without changing any existing row", async () => {
    const merchantId = freshMerchantId();
    const first = await runCli(["seed", "--merchant", merchantId, "--subscriptions", "150", "--seed", "again", "--batch-size", "40", "--json"], { env });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const firstOutput = json<SeedOutput>(first);
    expect(firstOutput).toMatchObject({ merchantId, merchantCreated: true, salt: "" });
    expect(firstOutput.counts.subscriptions).toBe(150);
    const before = await snapshot(merchantId);
    const maxNumber = await admin.query("SELECT max(number)::int AS max FROM orders WHERE merchant_id = $1", [merchantId]);

    // The same seed again: the existing counts salt it, so nothing collides.
    const second = await runCli(["seed", "--merchant", merchantId, "--subscriptions", "70", "--seed", "again", "--json"], { env });
    expect(second.code).toBe(0);
    const secondOutput = json<SeedOutput>(second);
    expect(secondOutput.merchantCreated).toBe(false);
    expect(secondOutput.salt).not.toBe("");
    const after = await snapshot(merchantId);

    const expected = {
      plans: firstOutput.counts.plans + secondOutput.counts.plans,
      customers: firstOutput.counts.customers + secondOutput.counts.customers,
      subscriptions: 220,
      charges: firstOutput.counts.charges + secondOutput.counts.charges,
      orders: firstOutput.counts.orders + secondOutput.counts.orders,
      order_line_items: firstOutput.counts.lineItems + secondOutput.counts.lineItems,
    };
    for (const table of TABLES) {
      expect(after[table]?.size, table).toBe(expected[table]);
      for (const [key, row] of before[table] ?? []) expect(after[table]?.get(key), `${table} ${key}`).toBe(row);
    }
    const numbers = await admin.query<{ number: number }>("SELECT number::int AS number FROM orders WHERE merchant_id = $1 AND number > $2 ORDER BY number", [
      merchantId,
      maxNumber.rows[0].max,
    ]);
    expect(numbers.rows.map((r) => r.number)).toEqual(numbers.rows.map((_, i) => maxNumber.rows[0].max + 1 + i));
  });

  it("gives two fresh merchants the same data under different ids with the same --seed and --now", async () => {
    const merchants = [freshMerchantId(), freshMerchantId()];
    const outputs = [];
    for (const merchantId of merchants) {
      const run = await runCli(
        ["seed", "--merchant", merchantId, "--subscriptions", "120", "--seed", "shape", "--now", "2026-01-15T08:00:00Z", "--name", "Shape Co", "--json"],
        { env },
      );
      expect(run.code).toBe(0);
      outputs.push(json<SeedOutput>(run).counts);
    }
    expect(outputs[1]).toEqual(outputs[0]);

    // Everything but the ids, compared as sorted lists.
    const shape = async (merchantId: string) => ({
      merchant: (await admin.query("SELECT name, created_at FROM merchants WHERE id = $1", [merchantId])).rows,
      subscriptions: (
        await admin.query(
          `SELECT status, price_minor, currency, quantity, current_period_start, current_period_end, next_charge_at, trial_ends_at,
                  paused_at, cancelled_at, cancellation_reason, created_at, updated_at, version
             FROM subscriptions WHERE merchant_id = $1 ORDER BY 1, 12, 5, 6, 3, 2, 4`,
          [merchantId],
        )
      ).rows,
      charges: (
        await admin.query(
          `SELECT status, amount_minor, amount_refunded_minor, currency, failure_code, scheduled_at, processed_at, created_at
             FROM charges WHERE merchant_id = $1 ORDER BY 8, 6, 1, 2`,
          [merchantId],
        )
      ).rows,
      orders: (
        await admin.query(
          `SELECT number, status, currency, subtotal_minor, discount_minor, shipping_minor, tax_minor, total_minor, created_at
             FROM orders WHERE merchant_id = $1 ORDER BY number`,
          [merchantId],
        )
      ).rows,
    });
    const [a, b] = [await shape(merchants[0] as string), await shape(merchants[1] as string)];
    expect(a.subscriptions.length).toBe(120);
    expect(b).toEqual(a);
    const ids = await admin.query("SELECT count(DISTINCT id)::int AS n FROM subscriptions WHERE merchant_id = ANY($1)", [merchants]);
    expect(ids.rows[0].n).toBe(240);
  });

  it("stores consistent money and statuses", async () => {
    const merchantId = freshMerchantId();
    const run = await runCli(["seed", "--merchant", merchantId, "--subscriptions", "300", "--json"], { env });
    expect(run.code).toBe(0);
    const statuses = await admin.query("SELECT DISTINCT status::text FROM subscriptions WHERE merchant_id = $1", [merchantId]);
    expect(statuses.rows.map((r) => r.status).sort()).toEqual(["ACTIVE", "CANCELLED", "EXPIRED", "PAST_DUE", "PAUSED", "TRIALING"]);
    const wrongCharges = await admin.query(
      `SELECT count(*)::int AS n FROM charges c JOIN subscriptions s ON s.id = c.subscription_id
        WHERE c.merchant_id = $1 AND (c.amount_minor <> s.price_minor * s.quantity OR c.currency <> s.currency)`,
      [merchantId],
    );
    expect(wrongCharges.rows[0].n).toBe(0);
    const wrongOrders = await admin.query(
      `SELECT count(*)::int AS n FROM orders o
        WHERE o.merchant_id = $1 AND (o.subtotal_minor - o.discount_minor + o.shipping_minor + o.tax_minor <> o.total_minor
           OR o.subtotal_minor <> (SELECT sum(total_minor) FROM order_line_items i WHERE i.order_id = o.id))`,
      [merchantId],
    );
    expect(wrongOrders.rows[0].n).toBe(0);
    const currencies = await admin.query("SELECT DISTINCT currency FROM plans WHERE merchant_id = $1", [merchantId]);
    expect(currencies.rows.map((r) => r.currency)).toEqual(expect.arrayContaining(["USD", "EUR", "GBP", "JPY", "KWD"]));
  });

  it("refuses a bad merchant id or count with a clear message", async () => {
    const badMerchant = await runCli(["seed", "--merchant", "acme", "--subscriptions", "5"], { env });
    expect(badMerchant.code).toBe(1);
    expect(badMerchant.stderr).toMatch(/--merchant must be mer_/);
    const badCount = await runCli(["seed", "--merchant", freshMerchantId(), "--subscriptions", "0", "--json"], { env });
    expect(badCount.code).toBe(1);
    expect(json(badCount)).toEqual({ error: { code: "invalid_argument", message: expect.stringMatching(/^--subscriptions must be/) } });
  });
});
