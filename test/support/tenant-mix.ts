import type pg from "pg";

/**
 * Real rows in the shapes tenants come in, loaded with set-based SQL (seconds, not the CLI seeder's
 * minutes), so the planner's statistics are those of the mix: what a generic plan is made for.
 *
 * Every subscription gets its own customer, one of its merchant's five plans, two charges, one order
 * with two line items, and feed history: a commit with its subscription.created and charge.created
 * events, then a commit with its order.created event.
 */
export interface MerchantGroup {
  /** Merchant ids are `${prefix}${index}`, index from 0. */
  prefix: string;
  merchants: number;
  subscriptionsEach: number;
}

export interface TenantMix {
  name: string;
  groups: MerchantGroup[];
  /** The merchant the reads walk: the largest. */
  readMerchantId: string;
}

/**
 * About `total` subscriptions in each of: one dominant merchant (a single-brand deployment); the bench's
 * skewed hundred (30 %, 5 % and 98 merchants that share the rest); ten thousand small merchants; and a
 * long tail of ten thousand small merchants beside one large, where the average merchant a generic plan
 * is made for is tiny and the one read is not.
 */
export function tenantMixes(total: number): TenantMix[] {
  const big = Math.round(total * 0.3);
  const hooks = Math.round(total * 0.05);
  return [
    { name: "one dominant merchant", groups: [{ prefix: "mer_dom", merchants: 1, subscriptionsEach: total }], readMerchantId: "mer_dom0" },
    {
      name: "a skewed hundred",
      groups: [
        { prefix: "mer_big", merchants: 1, subscriptionsEach: big },
        { prefix: "mer_hooks", merchants: 1, subscriptionsEach: hooks },
        { prefix: "mer_rest", merchants: 98, subscriptionsEach: Math.round((total - big - hooks) / 98) },
      ],
      readMerchantId: "mer_big0",
    },
    {
      name: "ten thousand small merchants",
      groups: [{ prefix: "mer_small", merchants: 10_000, subscriptionsEach: Math.max(1, Math.round(total / 10_000)) }],
      readMerchantId: "mer_small0",
    },
    {
      name: "a long tail of ten thousand small merchants and one large",
      groups: [
        { prefix: "mer_large", merchants: 1, subscriptionsEach: Math.round(total / 2) },
        { prefix: "mer_tail", merchants: 10_000, subscriptionsEach: Math.max(1, Math.round(total / 20_000)) },
      ],
      readMerchantId: "mer_large0",
    },
  ];
}

const STATUSES = ["ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED"];

/**
 * Loads the mix into an empty migrated database on an owner (superuser) connection, then ANALYZEs.
 * Row triggers are off while loading (session_replication_role), as the CLI seeder's bulk path does:
 * the feed history is written directly instead.
 */
export async function loadTenantMix(client: pg.ClientBase, mix: TenantMix): Promise<void> {
  const ids: string[] = [];
  const counts: number[] = [];
  for (const group of mix.groups) {
    for (let index = 0; index < group.merchants; index++) {
      ids.push(`${group.prefix}${index}`);
      counts.push(group.subscriptionsEach);
    }
  }
  await client.query("BEGIN");
  try {
    await client.query("SET LOCAL session_replication_role = replica");
    await client.query("CREATE TEMP TABLE mix (merchant_id text PRIMARY KEY, subscriptions int NOT NULL, ordinal int NOT NULL) ON COMMIT DROP");
    await client.query("INSERT INTO mix SELECT m, n, o::int FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS u(m, n, o)", [ids, counts]);
    await client.query(`INSERT INTO merchants (id, name, created_at) SELECT merchant_id, 'Merchant ' || ordinal, timestamptz '2024-01-01' FROM mix`);
    await client.query(`INSERT INTO plans (id, merchant_id, name, interval, interval_count, price_minor, currency, created_at)
      SELECT 'plan_' || x.merchant_id || '_' || p, x.merchant_id, 'Plan ' || p, (ARRAY['DAY','WEEK','MONTH','YEAR'])[1 + p % 4]::plan_interval,
             1, 1000 * p, 'EUR', timestamptz '2024-01-01'
        FROM mix x, generate_series(1, 5) p`);
    // One row per subscription to derive everything else from: its merchant, its number i within the
    // merchant and a creation time (a minute apart within a merchant, so keysets are realistic).
    await client.query(`CREATE TEMP TABLE seeded ON COMMIT DROP AS
      SELECT x.merchant_id, i, 'sub_' || x.merchant_id || '_' || i AS sub_id, 'cus_' || x.merchant_id || '_' || i AS cus_id,
             timestamptz '2025-01-01' + i * interval '1 minute' AS created_at,
             row_number() OVER (ORDER BY x.ordinal, i) AS n
        FROM mix x, generate_series(1, x.subscriptions) i`);
    await client.query(`INSERT INTO customers (id, merchant_id, email, name, created_at)
      SELECT cus_id, merchant_id, 'customer' || i || '@example.com', 'Customer ' || i, created_at FROM seeded`);
    await client.query(
      `INSERT INTO subscriptions (id, merchant_id, customer_id, plan_id, status, price_minor, currency, quantity,
         current_period_start, current_period_end, next_charge_at, created_at, updated_at, version)
       SELECT sub_id, merchant_id, cus_id, 'plan_' || merchant_id || '_' || (1 + i % 5), ($1::text[])[1 + i % 10]::subscription_status,
              1000 * (1 + i % 5), 'EUR', 1, created_at, created_at + interval '1 month', created_at + interval '1 month', created_at, created_at, 1
         FROM seeded`,
      [STATUSES],
    );
    await client.query(`INSERT INTO charges (id, merchant_id, subscription_id, status, amount_minor, currency, scheduled_at, processed_at, created_at)
      SELECT 'ch_' || sub_id || '_' || k, merchant_id, sub_id, 'SUCCEEDED', 1000, 'EUR',
             created_at + (k - 1) * interval '1 month', created_at + (k - 1) * interval '1 month', created_at + (k - 1) * interval '1 month'
        FROM seeded, generate_series(1, 2) k`);
    await client.query(`INSERT INTO orders (id, merchant_id, subscription_id, charge_id, number, status, currency, subtotal_minor, total_minor, created_at, updated_at)
      SELECT 'ord_' || sub_id, merchant_id, sub_id, 'ch_' || sub_id || '_1', i, 'PAID', 'EUR', 1000, 1000, created_at, created_at FROM seeded`);
    await client.query(`INSERT INTO order_line_items (order_id, position, merchant_id, sku, title, quantity, unit_price_minor, total_minor)
      SELECT 'ord_' || sub_id, k, merchant_id, 'SKU-' || k, 'Item ' || k, 1, 500, 500 FROM seeded, generate_series(1, 2) k`);
    // Feed history: commit 2n-1 (subscription and first charge created), commit 2n (its order).
    await client.query(`INSERT INTO change_commits (merchant_id, position, xid, committed_at)
      SELECT merchant_id, 2 * n - 2 + c, (1000 + 2 * n + c)::text::xid8, created_at FROM seeded, generate_series(1, 2) c`);
    await client.query(`INSERT INTO change_events (xid, merchant_id, resource_type, resource_id, event_type, version, occurred_at, payload)
      SELECT (1000 + 2 * n + e.c)::text::xid8, merchant_id, e.resource_type, e.prefix || sub_id, e.event_type, 1, created_at,
             jsonb_build_object('object', jsonb_build_object('id', e.prefix || sub_id), 'previous', null, 'changed_columns', '[]'::jsonb)
        FROM seeded, (VALUES (1, 'subscription', 'subscription.created', ''), (1, 'charge', 'charge.created', 'ch_'),
                             (2, 'order', 'order.created', 'ord_')) AS e(c, resource_type, event_type, prefix)
       ORDER BY n, e.c`);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
  await client.query("ANALYZE");
}
