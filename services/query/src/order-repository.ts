import type { KeysetCursor } from "@subdata/runtime";
import type { Pool } from "@subdata/runtime";
import { keysetWalk, MAX_LIST_ROWS, plannedPage, requireLimitWithin } from "./planned-page.ts";

/** A line item as aggregated to JSON inside the order's row (bigints as text, so never rounded). */
export interface LineItemRow {
  sku: string;
  title: string;
  quantity: number;
  unit_price_minor: string;
  total_minor: string;
}

/** An order with its line items, as the pool returns it (timestamps as exact text). */
export interface OrderRow {
  id: string;
  merchant_id: string;
  subscription_id: string;
  charge_id: string | null;
  number: bigint;
  status: string;
  currency: string;
  subtotal_minor: bigint;
  discount_minor: bigint;
  shipping_minor: bigint;
  tax_minor: bigint;
  total_minor: bigint;
  created_at: string;
  updated_at: string;
  version: bigint;
  line_items: LineItemRow[];
}

export interface ListOrdersQuery {
  merchantId: string;
  /** Only this subscription's orders, or null for all. */
  subscriptionId: string | null;
  /** Start strictly after this row; null for the first page. */
  after: KeysetCursor | null;
  /** The page size plus one, to learn whether there is a next page. */
  limit: number;
}

export interface OrderRepository {
  list(query: ListOrdersQuery): Promise<OrderRow[]>;
}

// Line items come with their order in the same statement (one round trip, one snapshot); the
// subselect runs only for the rows the LIMIT lets through, by the (order_id, position) primary key.
const COLUMNS = `o.id, o.merchant_id, o.subscription_id, o.charge_id, o.number, o.status, o.currency,
  o.subtotal_minor, o.discount_minor, o.shipping_minor, o.tax_minor, o.total_minor, o.created_at, o.updated_at, o.version,
  (SELECT coalesce(json_agg(json_build_object(
      'sku', li.sku, 'title', li.title, 'quantity', li.quantity,
      'unit_price_minor', li.unit_price_minor::text, 'total_minor', li.total_minor::text
    ) ORDER BY li.position), '[]'::json)
    FROM order_line_items li WHERE li.order_id = o.id AND li.merchant_id = $1) AS line_items`;

interface Statement {
  name: string;
  text: string;
}

/**
 * One named statement per (filter, first page or not), each planned for its index:
 * orders_merchant_keyset, or orders_merchant_subscription_keyset for one subscription.
 */
function listStatement(bySubscription: boolean, afterCursor: boolean): Statement {
  const walk = keysetWalk("o", bySubscription ? { column: "subscription_id", type: "text" } : null, afterCursor);
  return {
    name: `query_list_orders_${bySubscription ? "subscription" : "all"}_${afterCursor ? "after" : "first"}`,
    text: plannedPage(`SELECT ${COLUMNS} FROM orders o WHERE ${walk.conditions.join(" AND ")}`, "o", walk.order, walk.limit, MAX_LIST_ROWS),
  };
}

const LIST_STATEMENTS = {
  all: { first: listStatement(false, false), after: listStatement(false, true) },
  subscription: { first: listStatement(true, false), after: listStatement(true, true) },
};

/** Parameterised SQL over one merchant's orders; every statement has merchant_id = $1. */
export function createOrderRepository(pool: Pool): OrderRepository {
  return {
    async list(query) {
      const variants = query.subscriptionId === null ? LIST_STATEMENTS.all : LIST_STATEMENTS.subscription;
      const statement = query.after === null ? variants.first : variants.after;
      requireLimitWithin(query.limit, MAX_LIST_ROWS);
      const values: unknown[] = [query.merchantId];
      if (query.subscriptionId !== null) values.push(query.subscriptionId);
      if (query.after !== null) values.push(query.after.at, query.after.id);
      values.push(query.limit);
      const result = await pool.query<OrderRow>({ ...statement, values });
      return result.rows;
    },
  };
}

/** The statements' SQL, for tests that EXPLAIN them. */
export const orderStatements = { list: LIST_STATEMENTS };
