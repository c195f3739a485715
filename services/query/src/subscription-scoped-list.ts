import type { KeysetCursor, Pool } from "@subdata/runtime";
import { keysetWalk, keysetWalkValues, MAX_LIST_ROWS, type NamedStatement, plannedPage, requireLimitWithin } from "./planned-page.ts";

/** A page of one merchant's rows of a table whose rows belong to a subscription (charges, orders). */
export interface SubscriptionScopedListQuery {
  merchantId: string;
  /** Only this subscription's rows, or null for all. */
  subscriptionId: string | null;
  /** Start strictly after this row; null for the first page. */
  after: KeysetCursor | null;
  /** The page size plus one, to learn whether there is a next page. */
  limit: number;
}

/** The four statements of a list: all of the merchant's rows or one subscription's, first page or not. */
export type SubscriptionScopedListStatements = Record<"all" | "subscription", Record<"first" | "after", NamedStatement>>;

/**
 * One named statement per (filter, first page or not), each planned for its index: the table's
 * (merchant_id, created_at, id) keyset, or its (merchant_id, subscription_id, created_at, id) one.
 * `columns` name the table `alias`; every statement has merchant_id = $1.
 */
export function subscriptionScopedListStatements(table: string, alias: string, columns: string): SubscriptionScopedListStatements {
  const statement = (bySubscription: boolean, afterCursor: boolean): NamedStatement => {
    const walk = keysetWalk(alias, bySubscription ? { column: "subscription_id", type: "text" } : null, afterCursor);
    return {
      name: `query_list_${table}_${bySubscription ? "subscription" : "all"}_${afterCursor ? "after" : "first"}`,
      text: plannedPage(`SELECT ${columns} FROM ${table} ${alias} WHERE ${walk.conditions.join(" AND ")}`, alias, walk.order, walk.limit, MAX_LIST_ROWS),
    };
  };
  return {
    all: { first: statement(false, false), after: statement(false, true) },
    subscription: { first: statement(true, false), after: statement(true, true) },
  };
}

/** Runs the statement the query calls for, with its values in the statement's order. */
export async function listPage<Row extends object>(
  pool: Pool,
  statements: SubscriptionScopedListStatements,
  query: SubscriptionScopedListQuery,
): Promise<Row[]> {
  const variants = query.subscriptionId === null ? statements.all : statements.subscription;
  const statement = query.after === null ? variants.first : variants.after;
  requireLimitWithin(query.limit, MAX_LIST_ROWS);
  const values = keysetWalkValues(query.merchantId, query.subscriptionId, query.after, query.limit);
  const result = await pool.query<Row>({ ...statement, values });
  return result.rows;
}
