import { migrate } from "@subdata/db";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabaseBefore, type DatabaseBefore } from "../support/database-before.ts";

// A database that had subscription events before the feed existed: the feed's migration carries them
// over, in their original order, with their ids (the webhook-ids receivers already saw).

const FEED_MIGRATION = "20261126000100000_change_feed";
let database: DatabaseBefore;
let db: pg.Client;

beforeAll(async () => {
  database = await createDatabaseBefore(FEED_MIGRATION);
  db = database.db;
});
afterAll(async () => {
  await database?.drop();
});

describe("the change feed's migration", () => {
  it("carries the outbox's subscription events into the feed, same ids, same order, per merchant", async () => {
    for (const merchant of ["mer_one", "mer_two"]) {
      await db.query("INSERT INTO merchants (id, name) VALUES ($1, $1)", [merchant]);
      await db.query("INSERT INTO customers (id, merchant_id, email, name) VALUES ($1 || '_c', $1, 'a@example.com', 'A')", [merchant]);
      await db.query(
        "INSERT INTO plans (id, merchant_id, name, interval, interval_count, price_minor, currency) VALUES ($1 || '_p', $1, 'Box', 'MONTH', 1, 100, 'USD')",
        [merchant],
      );
      await db.query(
        `INSERT INTO subscriptions (id, merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
         VALUES ($1 || '_s', $1, $1 || '_c', $1 || '_p', 'ACTIVE', 100, 'USD', now(), now() + interval '1 month')`,
        [merchant],
      );
    }
    await db.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE merchant_id = 'mer_one'");
    const outbox = await db.query<{ id: string; merchant_id: string }>("SELECT id, merchant_id FROM event_outbox ORDER BY seq");
    expect(outbox.rows).toHaveLength(3);

    expect(await migrate({ databaseUrl: database.url })).toContain(FEED_MIGRATION);

    const feed = await db.query<{ merchant_id: string; id: string; event_type: string; previous: Record<string, unknown> | null }>(
      `SELECT c.merchant_id, e.id, e.event_type, e.payload -> 'previous' AS previous
         FROM change_commits c JOIN change_events e ON e.xid = c.xid AND e.merchant_id = c.merchant_id
        ORDER BY c.merchant_id, c.position, e.seq`,
    );
    expect(feed.rows.map((row) => [row.merchant_id, row.event_type])).toEqual([
      ["mer_one", "subscription.created"],
      ["mer_one", "subscription.updated"],
      ["mer_two", "subscription.created"],
    ]);
    const ids = (merchant: string, rows: Array<{ merchant_id: string; id: string }>) => rows.filter((row) => row.merchant_id === merchant).map((row) => row.id);
    expect(ids("mer_one", feed.rows)).toEqual(ids("mer_one", outbox.rows));
    // An update keeps only what differed in its previous state.
    expect(feed.rows[1]!.previous).toMatchObject({ status: "ACTIVE", paused_at: null });
    expect(feed.rows[1]!.previous).not.toHaveProperty("customer");

    // And capture goes on after it: the next change follows, in a commit of its own.
    await db.query("UPDATE subscriptions SET quantity = 2 WHERE merchant_id = 'mer_two'");
    const positions = await db.query("SELECT count(*)::int AS commits FROM change_commits WHERE merchant_id = 'mer_two'");
    expect(positions.rows[0].commits).toBe(2);
  });
});
