import type { Queryable } from "@subdata/runtime";

/**
 * Test fixtures for subdata's core tables, inserted with the admin (superuser) connection of the run's
 * database: `createFixtures(adminPool)`. Every insert takes options with sensible defaults and returns
 * the ids Postgres made (subdata_new_id defaults), so each test builds only what it needs in fresh
 * merchants and files can run in parallel. Timestamps are returned as the text a UTC session of
 * Postgres prints (exact microseconds, e.g. "2026-01-01 00:00:00.000001+00", whatever the admin
 * session's TimeZone) and accepted as any timestamptz text: give an explicit offset.
 */

export interface MerchantOptions {
  name?: string;
}

export interface CustomerOptions {
  email?: string;
  name?: string;
}

export interface PlanOptions {
  name?: string;
  interval?: "DAY" | "WEEK" | "MONTH" | "YEAR";
  intervalCount?: number;
  priceMinor?: bigint | number;
  currency?: string;
}

export interface SubscriptionOptions {
  merchantId: string;
  /** Created (with defaults) when omitted. */
  customerId?: string;
  /** Created (with the subscription's price and currency) when omitted. */
  planId?: string;
  status?: "ACTIVE" | "TRIALING" | "PAST_DUE" | "PAUSED" | "CANCELLED" | "EXPIRED";
  priceMinor?: bigint | number;
  currency?: string;
  quantity?: number;
  /** Postgres timestamptz text; defaults to now() (each statement its own). */
  createdAt?: string;
  currentPeriodStart?: string;
  currentPeriodEnd?: string;
  nextChargeAt?: string | null;
  trialEndsAt?: string | null;
  pausedAt?: string | null;
  cancelledAt?: string | null;
  cancellationReason?: string | null;
}

export interface SubscriptionFixture {
  id: string;
  customerId: string;
  planId: string;
  /** Exact Postgres text. */
  createdAt: string;
}

export interface ChargeOptions {
  merchantId: string;
  subscriptionId: string;
  status?: "PENDING" | "SUCCEEDED" | "FAILED" | "SKIPPED" | "REFUNDED" | "PARTIALLY_REFUNDED";
  amountMinor?: bigint | number;
  amountRefundedMinor?: bigint | number;
  currency?: string;
  orderId?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
  scheduledAt?: string;
  processedAt?: string | null;
  createdAt?: string;
}

export interface LineItemOptions {
  sku?: string;
  title?: string;
  quantity?: number;
  unitPriceMinor?: bigint | number;
}

export interface OrderOptions {
  merchantId: string;
  subscriptionId: string;
  chargeId?: string | null;
  /** Defaults to the merchant's highest number + 1 (insert one order at a time per merchant). */
  number?: bigint | number;
  status?: "PAID" | "FULFILLED" | "CANCELLED" | "REFUNDED";
  currency?: string;
  /** Default: one item of 1999 minor units. The subtotal is their sum. */
  lineItems?: LineItemOptions[];
  discountMinor?: bigint | number;
  shippingMinor?: bigint | number;
  taxMinor?: bigint | number;
  createdAt?: string;
}

export interface OrderFixture {
  id: string;
  number: bigint;
  subtotalMinor: bigint;
  totalMinor: bigint;
  createdAt: string;
}

export interface Fixtures {
  merchant(options?: MerchantOptions): Promise<string>;
  customer(merchantId: string, options?: CustomerOptions): Promise<string>;
  plan(merchantId: string, options?: PlanOptions): Promise<string>;
  subscription(options: SubscriptionOptions): Promise<SubscriptionFixture>;
  charge(options: ChargeOptions): Promise<string>;
  order(options: OrderOptions): Promise<OrderFixture>;
}

const toText = (value: bigint | number | undefined, fallback: bigint | number) => String(value ?? fallback);

export function createFixtures(db: Queryable): Fixtures {
  let sequence = 0;
  const unique = () => `${Date.now().toString(36)}${(sequence++).toString(36)}`;

  async function one<Row>(text: string, values: unknown[]): Promise<Row> {
    const result = await db.query(text, values);
    return result.rows[0] as Row;
  }

  const fixtures: Fixtures = {
    async merchant(options = {}) {
      const row = await one<{ id: string }>("INSERT INTO merchants (name) VALUES ($1) RETURNING id", [options.name ?? `Merchant ${unique()}`]);
      return row.id;
    },

    async customer(merchantId, options = {}) {
      const tag = unique();
      const row = await one<{ id: string }>("INSERT INTO customers (merchant_id, email, name) VALUES ($1, $2, $3) RETURNING id", [
        merchantId,
        options.email ?? `customer-${tag}@example.com`,
        options.name ?? `Customer ${tag}`,
      ]);
      return row.id;
    },

    async plan(merchantId, options = {}) {
      const row = await one<{ id: string }>(
        `INSERT INTO plans (merchant_id, name, interval, interval_count, price_minor, currency)
         VALUES ($1, $2, $3, $4, $5::bigint, $6) RETURNING id`,
        [
          merchantId,
          options.name ?? `Plan ${unique()}`,
          options.interval ?? "MONTH",
          options.intervalCount ?? 1,
          toText(options.priceMinor, 1999),
          options.currency ?? "USD",
        ],
      );
      return row.id;
    },

    async subscription(options) {
      const currency = options.currency ?? "USD";
      const priceMinor = options.priceMinor ?? 1999;
      const customerId = options.customerId ?? (await fixtures.customer(options.merchantId));
      const planId = options.planId ?? (await fixtures.plan(options.merchantId, { priceMinor, currency }));
      const row = await one<{ id: string; created_at: string }>(
        `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, quantity,
           current_period_start, current_period_end, next_charge_at, trial_ends_at, paused_at, cancelled_at,
           cancellation_reason, created_at)
         VALUES ($1, $2, $3, $4, $5::bigint, $6, $7,
           coalesce($8::timestamptz, now()), coalesce($9::timestamptz, now() + interval '1 month'),
           CASE WHEN $10::boolean THEN $11::timestamptz ELSE now() + interval '1 month' END,
           $12::timestamptz, $13::timestamptz, $14::timestamptz, $15, coalesce($16::timestamptz, now()))
         RETURNING id, (created_at AT TIME ZONE 'UTC')::text || '+00' AS created_at`,
        [
          options.merchantId,
          customerId,
          planId,
          options.status ?? "ACTIVE",
          String(priceMinor),
          currency,
          options.quantity ?? 1,
          options.currentPeriodStart ?? null,
          options.currentPeriodEnd ?? null,
          options.nextChargeAt !== undefined,
          options.nextChargeAt ?? null,
          options.trialEndsAt ?? null,
          options.pausedAt ?? null,
          options.cancelledAt ?? null,
          options.cancellationReason ?? null,
          options.createdAt ?? null,
        ],
      );
      return { id: row.id, customerId, planId, createdAt: row.created_at };
    },

    async charge(options) {
      const row = await one<{ id: string }>(
        `INSERT INTO charges (merchant_id, subscription_id, status, amount_minor, amount_refunded_minor, currency,
           order_id, failure_code, failure_message, scheduled_at, processed_at, created_at)
         VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6, $7, $8, $9, coalesce($10::timestamptz, now()),
           $11::timestamptz, coalesce($12::timestamptz, now()))
         RETURNING id`,
        [
          options.merchantId,
          options.subscriptionId,
          options.status ?? "SUCCEEDED",
          toText(options.amountMinor, 1999),
          toText(options.amountRefundedMinor, 0),
          options.currency ?? "USD",
          options.orderId ?? null,
          options.failureCode ?? null,
          options.failureMessage ?? null,
          options.scheduledAt ?? null,
          options.processedAt ?? null,
          options.createdAt ?? null,
        ],
      );
      return row.id;
    },

    async order(options) {
      const items = (options.lineItems ?? [{}]).map((item, index) => {
        const quantity = item.quantity ?? 1;
        const unitPriceMinor = BigInt(item.unitPriceMinor ?? 1999);
        return {
          position: index + 1,
          sku: item.sku ?? `SKU-${index + 1}`,
          title: item.title ?? `Item ${index + 1}`,
          quantity,
          unitPriceMinor,
          totalMinor: unitPriceMinor * BigInt(quantity),
        };
      });
      const subtotalMinor = items.reduce((sum, item) => sum + item.totalMinor, 0n);
      const discountMinor = BigInt(options.discountMinor ?? 0);
      const shippingMinor = BigInt(options.shippingMinor ?? 0);
      const taxMinor = BigInt(options.taxMinor ?? 0);
      const totalMinor = subtotalMinor - discountMinor + shippingMinor + taxMinor;
      // Order and line items in one statement, so a failure leaves nothing half-inserted.
      const row = await one<{ id: string; number: string; created_at: string }>(
        `WITH new_order AS (
           INSERT INTO orders (merchant_id, subscription_id, charge_id, number, status, currency, subtotal_minor,
             discount_minor, shipping_minor, tax_minor, total_minor, created_at)
           VALUES ($1, $2, $3,
             coalesce($4::bigint, (SELECT coalesce(max(number), 0) + 1 FROM orders WHERE merchant_id = $1)),
             $5, $6, $7::bigint, $8::bigint, $9::bigint, $10::bigint, $11::bigint, coalesce($12::timestamptz, now()))
           RETURNING id, number, created_at
         ), items AS (
           INSERT INTO order_line_items (order_id, position, merchant_id, sku, title, quantity, unit_price_minor, total_minor)
           SELECT new_order.id, item.position, $1, item.sku, item.title, item.quantity, item.unit_price_minor, item.total_minor
           FROM new_order, jsonb_to_recordset($13::jsonb) AS item(position int, sku text, title text, quantity int,
             unit_price_minor bigint, total_minor bigint)
         )
         SELECT id, number::text, (created_at AT TIME ZONE 'UTC')::text || '+00' AS created_at FROM new_order`,
        [
          options.merchantId,
          options.subscriptionId,
          options.chargeId ?? null,
          options.number === undefined ? null : String(options.number),
          options.status ?? "PAID",
          options.currency ?? "USD",
          String(subtotalMinor),
          String(discountMinor),
          String(shippingMinor),
          String(taxMinor),
          String(totalMinor),
          options.createdAt ?? null,
          JSON.stringify(
            items.map((item) => ({
              position: item.position,
              sku: item.sku,
              title: item.title,
              quantity: item.quantity,
              // As JSON strings: jsonb_to_recordset casts them to bigint exactly.
              unit_price_minor: String(item.unitPriceMinor),
              total_minor: String(item.totalMinor),
            })),
          ),
        ],
      );
      return { id: row.id, number: BigInt(row.number), subtotalMinor, totalMinor, createdAt: row.created_at };
    },
  };
  return fixtures;
}
