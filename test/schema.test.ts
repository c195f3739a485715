import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

describe("the schema", () => {
  const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  const asQueryRole = new pg.Client({ connectionString: inject("roleDatabaseUrls").query });
  let subscriptionId = "";

  beforeAll(async () => {
    await admin.connect();
    await asQueryRole.connect();
    const merchant = await admin.query("INSERT INTO merchants (name) VALUES ('schema test') RETURNING id");
    const merchantId = merchant.rows[0].id;
    const customer = await admin.query("INSERT INTO customers (merchant_id, email, name) VALUES ($1, 'a@example.com', 'A') RETURNING id", [merchantId]);
    const plan = await admin.query(
      "INSERT INTO plans (merchant_id, name, interval, interval_count, price_minor, currency) VALUES ($1, 'Box', 'MONTH', 1, 1999, 'USD') RETURNING id",
      [merchantId],
    );
    const subscription = await admin.query(
      `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end, version)
       VALUES ($1, $2, $3, 'ACTIVE', 1999, 'USD', now(), now() + interval '1 month', 42) RETURNING id, version`,
      [merchantId, customer.rows[0].id, plan.rows[0].id],
    );
    subscriptionId = subscription.rows[0].id;
    expect(subscription.rows[0].version).toBe("1");
  });

  afterAll(async () => {
    await asQueryRole.end();
    await admin.end();
  });

  it("bumps version by exactly one on every real change, whatever the writer sets", async () => {
    const changed = await admin.query("UPDATE subscriptions SET status = 'PAUSED', version = 99 WHERE id = $1 RETURNING version", [subscriptionId]);
    expect(changed.rows[0].version).toBe("2");
    const again = await admin.query("UPDATE subscriptions SET status = 'ACTIVE' WHERE id = $1 RETURNING version", [subscriptionId]);
    expect(again.rows[0].version).toBe("3");
  });

  it("leaves version alone on an UPDATE that changes nothing", async () => {
    const before = await admin.query("SELECT version FROM subscriptions WHERE id = $1", [subscriptionId]);
    const noop = await admin.query("UPDATE subscriptions SET status = status WHERE id = $1 RETURNING version", [subscriptionId]);
    expect(noop.rows[0].version).toBe(before.rows[0].version);
  });

  it("runs the capture triggers' helpers as PL/pgSQL, whose plans last the session", async () => {
    // A LANGUAGE sql helper that cannot be inlined is parsed and planned again at every trigger call:
    // it made capture nearly twice as slow (migration 20261130005000000_capture_snapshots_plpgsql.sql).
    const { rows } = await admin.query<{ name: string; language: string }>(
      `SELECT p.proname AS name, l.lanname AS language
         FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
        WHERE p.pronamespace = 'public'::regnamespace
          AND (p.proname IN ('subdata_record_change', 'subdata_changed_columns') OR p.proname LIKE 'subdata\\_%\\_snapshot')
        ORDER BY p.proname`,
    );
    expect(rows).toEqual(
      ["subdata_changed_columns", "subdata_charge_snapshot", "subdata_order_snapshot", "subdata_record_change", "subdata_subscription_snapshot"].map(
        (name) => ({ name, language: "plpgsql" }),
      ),
    );
  });

  it("keeps no btree index whose key columns lead another btree index of the same table", async () => {
    // The wider index answers the same lookups; the narrower one costs a write per row version (a
    // delivery row is written three times, never HOT) and its space. Unique, partial and expression
    // indexes are left alone (each does something the wider one does not); INCLUDE columns are not
    // keys; a lookup can use the wider index only with the same operator classes, collations and order.
    const { rows } = await admin.query<{ narrower: string; wider: string }>(
      `WITH keys AS (
         SELECT i.indexrelid, i.indrelid, i.indisunique, i.indpred, i.indexprs,
                -- The first indnkeyatts entries of each per-column vector, as text ("3 1"): comparable by prefix.
                array_to_string((string_to_array(i.indkey::text, ' '))[1:i.indnkeyatts], ' ')
                  || '/' || array_to_string((string_to_array(i.indclass::text, ' '))[1:i.indnkeyatts], ' ')
                  || '/' || array_to_string((string_to_array(i.indcollation::text, ' '))[1:i.indnkeyatts], ' ')
                  || '/' || array_to_string((string_to_array(i.indoption::text, ' '))[1:i.indnkeyatts], ' ') AS columns,
                i.indnkeyatts
           FROM pg_index i
           JOIN pg_class ic ON ic.oid = i.indexrelid
           JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
           JOIN pg_class t ON t.oid = i.indrelid AND t.relnamespace = 'public'::regnamespace
       )
       SELECT a.indexrelid::regclass::text AS narrower, b.indexrelid::regclass::text AS wider
         FROM keys a
         JOIN keys b ON b.indrelid = a.indrelid AND b.indexrelid <> a.indexrelid AND b.indnkeyatts >= a.indnkeyatts
        WHERE NOT a.indisunique AND a.indpred IS NULL AND b.indpred IS NULL AND a.indexprs IS NULL AND b.indexprs IS NULL
          AND (SELECT bool_and(split_part(b.columns, '/', n) || ' ' LIKE split_part(a.columns, '/', n) || ' %') FROM generate_series(1, 4) AS n)
        ORDER BY 1, 2`,
    );
    expect(rows).toEqual([]);
  });

  it("lets the query role read", async () => {
    const result = await asQueryRole.query("SELECT id FROM subscriptions WHERE id = $1", [subscriptionId]);
    expect(result.rowCount).toBe(1);
  });

  it.each([
    ["INSERT", "INSERT INTO merchants (name) VALUES ('intruder')"],
    ["UPDATE", "UPDATE subscriptions SET quantity = 2"],
    ["DELETE", "DELETE FROM charges"],
    ["TRUNCATE", "TRUNCATE orders"],
  ])("refuses %s to the query role", async (_verb, sql) => {
    await expect(asQueryRole.query(sql)).rejects.toThrow(/permission denied|read-only transaction/);
  });
});
