import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { inTransaction } from "../database.ts";
import { copyNumber as n, copyText as t, copyTime as ts } from "./copy-format.ts";
import type { ChargeRow, CustomerRow, LineItemRow, OrderRow, PlanRow, SeedBatch, SubscriptionRow } from "./rows.ts";

/**
 * Writes generated rows with COPY FROM STDIN, one transaction per call, so an interrupted seed leaves
 * whole batches. Tables go in foreign-key order (charges before the orders that reference them).
 */

interface TableFormat<Row> {
  table: string;
  columns: readonly string[];
  line: (row: Row) => string;
}

const plans: TableFormat<PlanRow> = {
  table: "plans",
  columns: ["id", "merchant_id", "name", "interval", "interval_count", "price_minor", "currency", "created_at"],
  line: (r) => `${r.id}\t${r.merchantId}\t${t(r.name)}\t${r.interval}\t${n(r.intervalCount)}\t${n(r.priceMinor)}\t${r.currency}\t${ts(r.createdAt)}`,
};

const customers: TableFormat<CustomerRow> = {
  table: "customers",
  columns: ["id", "merchant_id", "email", "name", "created_at"],
  line: (r) => `${r.id}\t${r.merchantId}\t${t(r.email)}\t${t(r.name)}\t${ts(r.createdAt)}`,
};

const subscriptions: TableFormat<SubscriptionRow> = {
  table: "subscriptions",
  columns: [
    "id",
    "merchant_id",
    "customer_id",
    "plan_id",
    "status",
    "price_minor",
    "currency",
    "quantity",
    "current_period_start",
    "current_period_end",
    "next_charge_at",
    "trial_ends_at",
    "paused_at",
    "cancelled_at",
    "cancellation_reason",
    "created_at",
    "updated_at",
  ],
  line: (r) =>
    `${r.id}\t${r.merchantId}\t${r.customerId}\t${r.planId}\t${r.status}\t${n(r.priceMinor)}\t${r.currency}\t${n(r.quantity)}\t` +
    `${ts(r.currentPeriodStart)}\t${ts(r.currentPeriodEnd)}\t${ts(r.nextChargeAt)}\t${ts(r.trialEndsAt)}\t${ts(r.pausedAt)}\t` +
    `${ts(r.cancelledAt)}\t${t(r.cancellationReason)}\t${ts(r.createdAt)}\t${ts(r.updatedAt)}`,
};

const charges: TableFormat<ChargeRow> = {
  table: "charges",
  columns: [
    "id",
    "merchant_id",
    "subscription_id",
    "status",
    "amount_minor",
    "amount_refunded_minor",
    "currency",
    "order_id",
    "failure_code",
    "failure_message",
    "scheduled_at",
    "processed_at",
    "created_at",
  ],
  line: (r) =>
    `${r.id}\t${r.merchantId}\t${r.subscriptionId}\t${r.status}\t${n(r.amountMinor)}\t${n(r.amountRefundedMinor)}\t${r.currency}\t` +
    `${t(r.orderId)}\t${t(r.failureCode)}\t${t(r.failureMessage)}\t${ts(r.scheduledAt)}\t${ts(r.processedAt)}\t${ts(r.createdAt)}`,
};

const orders: TableFormat<OrderRow> = {
  table: "orders",
  columns: [
    "id",
    "merchant_id",
    "subscription_id",
    "charge_id",
    "number",
    "status",
    "currency",
    "subtotal_minor",
    "discount_minor",
    "shipping_minor",
    "tax_minor",
    "total_minor",
    "created_at",
    "updated_at",
  ],
  line: (r) =>
    `${r.id}\t${r.merchantId}\t${r.subscriptionId}\t${r.chargeId}\t${n(r.number)}\t${r.status}\t${r.currency}\t` +
    `${n(r.subtotalMinor)}\t${n(r.discountMinor)}\t${n(r.shippingMinor)}\t${n(r.taxMinor)}\t${n(r.totalMinor)}\t` +
    `${ts(r.createdAt)}\t${ts(r.updatedAt)}`,
};

const lineItems: TableFormat<LineItemRow> = {
  table: "order_line_items",
  columns: ["order_id", "position", "merchant_id", "sku", "title", "quantity", "unit_price_minor", "total_minor"],
  line: (r) => `${r.orderId}\t${n(r.position)}\t${r.merchantId}\t${t(r.sku)}\t${t(r.title)}\t${n(r.quantity)}\t${n(r.unitPriceMinor)}\t${n(r.totalMinor)}`,
};

const CHUNK_ROWS = 2_000;

function* chunks<Row>(format: TableFormat<Row>, rows: readonly Row[]): Generator<string> {
  for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
    let text = "";
    const end = Math.min(rows.length, start + CHUNK_ROWS);
    for (let i = start; i < end; i++) text += `${format.line(rows[i] as Row)}\n`;
    yield text;
  }
}

async function copyRows<Row>(client: pg.ClientBase, format: TableFormat<Row>, rows: readonly Row[]): Promise<void> {
  if (rows.length === 0) return;
  // Timestamps are written as UTC text with an explicit zone, so the session's TimeZone does not matter.
  const stream = client.query(copyFrom(`COPY ${format.table} (${format.columns.join(", ")}) FROM STDIN`));
  await pipeline(Readable.from(chunks(format, rows)), stream);
}

/** Copies plans inside the caller's transaction (the seed creates its merchant in the same one). */
export async function copyPlans(client: pg.ClientBase, rows: readonly PlanRow[]): Promise<void> {
  await copyRows(client, plans, rows);
}

export interface WriteBatchOptions {
  /**
   * Bulk-load with session_replication_role = replica (superuser only): no row triggers fire, so no
   * change-capture events and no foreign-key re-checks. Off by default: seeded subscriptions are
   * writes like any other and produce subscription.created events.
   */
  withoutTriggers?: boolean;
}

/** Writes one batch in its own transaction. */
export async function writeSeedBatch(client: pg.ClientBase, batch: SeedBatch, options: WriteBatchOptions = {}): Promise<void> {
  await inTransaction(client, async () => {
    if (options.withoutTriggers) await client.query("SET LOCAL session_replication_role = replica");
    await copyRows(client, customers, batch.customers);
    await copyRows(client, subscriptions, batch.subscriptions);
    await copyRows(client, charges, batch.charges);
    await copyRows(client, orders, batch.orders);
    await copyRows(client, lineItems, batch.lineItems);
  });
}
