import { formatMinorUnits } from "@subdata/runtime";
import type pg from "pg";
import { CliError } from "./cli-error.ts";
import { inTransaction } from "./database.ts";
import { type DecimalAmount, toMinorUnits } from "./option-parsers.ts";
import type { OrderStatus } from "./seed/rows.ts";

/** The largest value of a bigint column. */
const MAX_BIGINT = 2n ** 63n - 1n;

export interface SetOrderStatusInput {
  orderId: string;
  status: OrderStatus;
}

export interface AddLineItemInput {
  orderId: string;
  sku: string;
  title: string;
  quantity: number;
  /** In the order's currency; 0 is a free item. */
  unitPrice: DecimalAmount;
}

export interface OrderStatusChange {
  id: string;
  previousStatus: OrderStatus;
  status: OrderStatus;
  previousVersion: number;
  version: number;
  /** False when the order already had the status: the database then keeps version. */
  changed: boolean;
}

/** An order before and after one added line item. Money as decimal strings in the order's currency. */
export interface LineItemAddition extends OrderStatusChange {
  currency: string;
  lineItem: { position: number; sku: string; title: string; quantity: number; unitPrice: string; total: string };
  previousSubtotal: string;
  subtotal: string;
  previousTotal: string;
  total: string;
}

export interface OrderDeletion {
  id: string;
  previousStatus: OrderStatus;
  status: null;
  previousVersion: number;
  version: null;
  changed: true;
  /** Its line items, deleted with it (the order.deleted event carries them). */
  lineItemsDeleted: number;
}

interface OrderRow {
  status: OrderStatus;
  version: string;
  currency: string;
  subtotal_minor: string;
  discount_minor: string;
  shipping_minor: string;
  tax_minor: string;
  total_minor: string;
}

async function lockOrder(client: pg.ClientBase, orderId: string): Promise<OrderRow> {
  const row = (
    await client.query<OrderRow>(
      `SELECT status::text AS status, version::text AS version, currency, subtotal_minor::text AS subtotal_minor,
              discount_minor::text AS discount_minor, shipping_minor::text AS shipping_minor, tax_minor::text AS tax_minor,
              total_minor::text AS total_minor
         FROM orders WHERE id = $1 FOR UPDATE`,
      [orderId],
    )
  ).rows[0];
  if (!row) throw new CliError(`order ${orderId} not found`, "not_found");
  return row;
}

/** Changes one order's status in a plain transaction, as the app would; the database bumps version. */
export async function setOrderStatus(client: pg.ClientBase, input: SetOrderStatusInput): Promise<OrderStatusChange> {
  return inTransaction(client, async () => {
    const before = await lockOrder(client, input.orderId);
    const after = (
      await client.query<{ status: OrderStatus; version: string }>(
        "UPDATE orders SET status = $2::text::order_status WHERE id = $1 RETURNING status::text AS status, version::text AS version",
        [input.orderId, input.status],
      )
    ).rows[0]!;
    return {
      id: input.orderId,
      previousStatus: before.status,
      status: after.status,
      previousVersion: Number(before.version),
      version: Number(after.version),
      changed: after.version !== before.version,
    };
  });
}

/**
 * Appends a line item at the next position and keeps the order adding up as the generator makes it:
 * subtotal = the sum of the line totals, total = subtotal − discount + shipping + tax (discount,
 * shipping and tax stay as they are). The order row is written first and always changes (updated_at),
 * so the database's trigger on line items leaves it alone: one version, one order.updated, whose
 * snapshot (taken at commit) includes the new item.
 */
export async function addOrderLineItem(client: pg.ClientBase, input: AddLineItemInput): Promise<LineItemAddition> {
  return inTransaction(client, async () => {
    const before = await lockOrder(client, input.orderId);
    const unitPrice = toMinorUnits(input.unitPrice, before.currency, "--unit-price");
    const items = (
      await client.query<{ sum: string; last: number }>(
        "SELECT coalesce(sum(total_minor), 0)::text AS sum, coalesce(max(position), 0) AS last FROM order_line_items WHERE order_id = $1",
        [input.orderId],
      )
    ).rows[0]!;
    const lineTotal = unitPrice * BigInt(input.quantity);
    const subtotal = BigInt(items.sum) + lineTotal;
    const total = subtotal - BigInt(before.discount_minor) + BigInt(before.shipping_minor) + BigInt(before.tax_minor);
    if (lineTotal > MAX_BIGINT || subtotal > MAX_BIGINT || total > MAX_BIGINT) {
      throw new CliError(
        `--unit-price ${input.unitPrice.text} × --quantity ${input.quantity} makes the order's total more than ${formatMinorUnits(MAX_BIGINT, before.currency)} ${before.currency}`,
      );
    }
    const position = items.last + 1;
    const after = (
      await client.query<{ status: OrderStatus; version: string }>(
        `UPDATE orders SET subtotal_minor = $2::bigint, total_minor = $3::bigint, updated_at = clock_timestamp() WHERE id = $1
         RETURNING status::text AS status, version::text AS version`,
        [input.orderId, String(subtotal), String(total)],
      )
    ).rows[0]!;
    await client.query(
      `INSERT INTO order_line_items (order_id, position, merchant_id, sku, title, quantity, unit_price_minor, total_minor)
       SELECT id, $2, merchant_id, $3, $4, $5, $6::bigint, $7::bigint FROM orders WHERE id = $1`,
      [input.orderId, position, input.sku, input.title, input.quantity, String(unitPrice), String(lineTotal)],
    );
    const money = (minor: bigint | string) => formatMinorUnits(BigInt(minor), before.currency);
    return {
      id: input.orderId,
      previousStatus: before.status,
      status: after.status,
      previousVersion: Number(before.version),
      version: Number(after.version),
      changed: true,
      currency: before.currency,
      lineItem: { position, sku: input.sku, title: input.title, quantity: input.quantity, unitPrice: money(unitPrice), total: money(lineTotal) },
      previousSubtotal: money(before.subtotal_minor),
      subtotal: money(subtotal),
      previousTotal: money(before.total_minor),
      total: money(total),
    };
  });
}

/**
 * Deletes one order and its line items (development only: the app never deletes orders). The database
 * records one order.deleted event with the items; a charge that names the order keeps its order_id.
 */
export async function deleteOrder(client: pg.ClientBase, orderId: string): Promise<OrderDeletion> {
  return inTransaction(client, async () => {
    const before = await lockOrder(client, orderId);
    const items = await client.query<{ count: number }>("SELECT count(*)::int AS count FROM order_line_items WHERE order_id = $1", [orderId]);
    await client.query("DELETE FROM orders WHERE id = $1", [orderId]);
    return {
      id: orderId,
      previousStatus: before.status,
      status: null,
      previousVersion: Number(before.version),
      version: null,
      changed: true,
      lineItemsDeleted: items.rows[0]!.count,
    };
  });
}
