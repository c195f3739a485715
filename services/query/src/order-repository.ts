import type { Pool } from "@subdata/runtime";
import { listPage, type SubscriptionScopedListQuery, subscriptionScopedListStatements } from "./subscription-scoped-list.ts";

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

export interface OrderRepository {
  list(query: SubscriptionScopedListQuery): Promise<OrderRow[]>;
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

const LIST_STATEMENTS = subscriptionScopedListStatements("orders", "o", COLUMNS);

/** Parameterised SQL over one merchant's orders; every statement has merchant_id = $1. */
export function createOrderRepository(pool: Pool): OrderRepository {
  return { list: (query) => listPage<OrderRow>(pool, LIST_STATEMENTS, query) };
}

/** The statements' SQL, for tests that EXPLAIN them. */
export const orderStatements = { list: LIST_STATEMENTS };
