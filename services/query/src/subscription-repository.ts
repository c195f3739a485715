import type { KeysetCursor, Pool } from "@subdata/runtime";
import { keysetWalk, keysetWalkValues, MAX_LIST_ROWS, type NamedStatement, plannedPage, requireLimitWithin } from "./planned-page.ts";

/** A subscription with its customer and plan, as the pool returns it (timestamps as exact text). */
export interface SubscriptionRow {
  id: string;
  merchant_id: string;
  status: string;
  price_minor: bigint;
  currency: string;
  quantity: number;
  current_period_start: string;
  current_period_end: string;
  next_charge_at: string | null;
  trial_ends_at: string | null;
  paused_at: string | null;
  cancelled_at: string | null;
  cancellation_reason: string | null;
  created_at: string;
  updated_at: string;
  version: bigint;
  customer_id: string;
  /** Null only if the customer belongs to another merchant (corrupt data; the mapping refuses it). */
  customer_email: string | null;
  customer_name: string | null;
  plan_id: string;
  /** Null only if the plan belongs to another merchant (corrupt data; the mapping refuses it). */
  plan_name: string | null;
  plan_interval: string | null;
  plan_interval_count: number | null;
}

/**
 * A charge as aggregated to JSON inside the subscription's query: bigints and timestamps travel as
 * text so neither is rounded (JSON numbers are doubles, JSON timestamps would lose the exact text).
 */
export interface ChargeRow {
  id: string;
  subscription_id: string;
  status: string;
  amount_minor: string;
  amount_refunded_minor: string;
  currency: string;
  order_id: string | null;
  failure_code: string | null;
  failure_message: string | null;
  scheduled_at: string;
  processed_at: string | null;
  created_at: string;
  version: string;
}

export interface SubscriptionWithChargesRow extends SubscriptionRow {
  charges: ChargeRow[];
}

export interface ListSubscriptionsQuery {
  merchantId: string;
  /** A subscription_status label, or null for all. */
  status: string | null;
  /** Start strictly after this row; null for the first page. */
  after: KeysetCursor | null;
  /** Rows to fetch: the page size plus one, to learn whether there is a next page. */
  limit: number;
}

export interface SubscriptionRepository {
  list(query: ListSubscriptionsQuery): Promise<SubscriptionRow[]>;
  /** The merchant's subscription with all its charges (oldest first), or undefined. */
  findWithCharges(merchantId: string, subscriptionId: string): Promise<SubscriptionWithChargesRow | undefined>;
}

const COLUMNS = `s.id, s.merchant_id, s.status, s.price_minor, s.currency, s.quantity,
  s.current_period_start, s.current_period_end, s.next_charge_at, s.trial_ends_at, s.paused_at,
  s.cancelled_at, s.cancellation_reason, s.created_at, s.updated_at, s.version,
  s.customer_id, c.email AS customer_email, c.name AS customer_name,
  s.plan_id, p.name AS plan_name, p.interval AS plan_interval, p.interval_count AS plan_interval_count`;

// The lookups repeat the tenant condition, so a customer or plan wrongly linked across merchants is
// never shown; they are LEFT joins so such a row fails loudly in the mapping instead of silently
// vanishing from a page (which would also end a walk early).
//
// They are LATERAL subqueries with a LIMIT, which Postgres cannot flatten into plain joins: each is a
// primary-key probe per row of the page, whatever the statistics. As plain joins, the generic plan the
// pool runs (pool.ts) can hash-join every customer of a merchant larger than the average it was made
// for, or walk all of them for each row of the page (docs/decisions.md).
const JOINS = `LEFT JOIN LATERAL (SELECT c.email, c.name FROM customers c
                      WHERE c.id = s.customer_id AND c.merchant_id = $1 LIMIT 1) c ON true
  LEFT JOIN LATERAL (SELECT p.name, p.interval, p.interval_count FROM plans p
                      WHERE p.id = s.plan_id AND p.merchant_id = $1 LIMIT 1) p ON true`;

const CHARGES = `(SELECT coalesce(json_agg(json_build_object(
    'id', ch.id, 'subscription_id', ch.subscription_id, 'status', ch.status, 'amount_minor', ch.amount_minor::text,
    'amount_refunded_minor', ch.amount_refunded_minor::text, 'currency', ch.currency, 'order_id', ch.order_id,
    'failure_code', ch.failure_code, 'failure_message', ch.failure_message,
    'scheduled_at', ch.scheduled_at::text, 'processed_at', ch.processed_at::text, 'created_at', ch.created_at::text,
    'version', ch.version::text
  ) ORDER BY ch.created_at, ch.id), '[]'::json)
  FROM charges ch WHERE ch.merchant_id = $1 AND ch.subscription_id = s.id) AS charges`;

/**
 * One named statement per (filter, first page or not) combination, so each is prepared once per
 * connection and planned for its own index: subscriptions_merchant_keyset without a status,
 * subscriptions_merchant_status_keyset with one. The keyset is the row comparison the index orders by.
 */
function listStatement(byStatus: boolean, afterCursor: boolean): NamedStatement {
  const walk = keysetWalk("s", byStatus ? { column: "status", type: "subscription_status" } : null, afterCursor);
  // The page is cut from the keyset index first and its customers and plans looked up after.
  const page = plannedPage(`SELECT * FROM subscriptions s WHERE ${walk.conditions.join(" AND ")}`, "s", walk.order, walk.limit, MAX_LIST_ROWS);
  return {
    name: `query_list_subscriptions_${byStatus ? "status" : "all"}_${afterCursor ? "after" : "first"}`,
    text: `SELECT ${COLUMNS} FROM (${page}) s ${JOINS} ORDER BY ${walk.order}`,
  };
}

const LIST_STATEMENTS = {
  all: { first: listStatement(false, false), after: listStatement(false, true) },
  status: { first: listStatement(true, false), after: listStatement(true, true) },
};

const GET_WITH_CHARGES: NamedStatement = {
  name: "query_get_subscription_with_charges",
  // One statement, so the subscription and its charges come from one snapshot.
  text: `SELECT ${COLUMNS}, ${CHARGES} FROM subscriptions s ${JOINS} WHERE s.merchant_id = $1 AND s.id = $2`,
};

/** Parameterised SQL over the subscriptions of one merchant at a time; every statement has merchant_id = $1. */
export function createSubscriptionRepository(pool: Pool): SubscriptionRepository {
  return {
    async list(query) {
      const variants = query.status === null ? LIST_STATEMENTS.all : LIST_STATEMENTS.status;
      const statement = query.after === null ? variants.first : variants.after;
      requireLimitWithin(query.limit, MAX_LIST_ROWS);
      const values = keysetWalkValues(query.merchantId, query.status, query.after, query.limit);
      const result = await pool.query<SubscriptionRow>({ ...statement, values });
      return result.rows;
    },
    async findWithCharges(merchantId, subscriptionId) {
      const result = await pool.query<SubscriptionWithChargesRow>({ ...GET_WITH_CHARGES, values: [merchantId, subscriptionId] });
      return result.rows[0];
    },
  };
}

/** The statements' SQL, for tests that EXPLAIN them. */
export const subscriptionStatements = { list: LIST_STATEMENTS, getWithCharges: GET_WITH_CHARGES };
