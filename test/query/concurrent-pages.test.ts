import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RunningQueryServer, startQueryServer } from "../support/query-server.ts";

const ROWS = 200;
const CONCURRENT = 64;

describe("many large pages at once over one HTTP/2 session", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  let query: RunningQueryServer;
  let merchantId: string;

  beforeAll(async () => {
    query = await startQueryServer();
    // 200 ACTIVE subscriptions in one statement (the fixtures insert one row per call).
    merchantId = (await admin.query<{ id: string }>("INSERT INTO merchants (name) VALUES ('concurrent pages') RETURNING id")).rows[0]!.id;
    const customerId = (
      await admin.query<{ id: string }>("INSERT INTO customers (merchant_id, email, name) VALUES ($1, 'pages@example.com', 'Pages') RETURNING id", [merchantId])
    ).rows[0]!.id;
    const planId = (
      await admin.query<{ id: string }>(
        "INSERT INTO plans (merchant_id, name, interval, interval_count, price_minor, currency) VALUES ($1, 'Monthly', 'MONTH', 1, 1999, 'USD') RETURNING id",
        [merchantId],
      )
    ).rows[0]!.id;
    await admin.query(
      `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, quantity, current_period_start, current_period_end, next_charge_at, created_at)
       SELECT $1, $2, $3, 'ACTIVE', 1999, 'USD', 1, now(), now() + interval '1 month', now() + interval '1 month', now() - make_interval(secs => n)
         FROM generate_series(1, $4::int) AS n`,
      [merchantId, customerId, planId, ROWS],
    );
  });

  afterAll(async () => {
    await query?.stop();
    await admin.end();
  });

  // Regression: with the protocol's 64 KB connection window, 64 concurrent ~58 KB pages crawled
  // through one session a window at a time and, behind a busy gateway, ran into their deadlines.
  it(`serves ${CONCURRENT} concurrent ListSubscriptions of ${ROWS} rows through one transport`, async () => {
    const pages = await Promise.all(
      Array.from({ length: CONCURRENT }, () => query.subscriptions.listSubscriptions({ merchantId, pageSize: ROWS, status: SubscriptionStatus.ACTIVE })),
    );
    for (const page of pages) expect(page.subscriptions).toHaveLength(ROWS);
    expect(new Set(pages.map((page) => page.subscriptions.map((subscription) => subscription.id).join())).size).toBe(1);
  }, 60_000);
});
