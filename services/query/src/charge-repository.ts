import type { KeysetCursor, Pool } from "@subdata/runtime";
import { keysetWalk, MAX_LIST_ROWS, plannedPage, requireLimitWithin } from "./planned-page.ts";
import type { ChargeRow } from "./subscription-repository.ts";

export interface ListChargesQuery {
  merchantId: string;
  /** Only this subscription's charges, or null for all. */
  subscriptionId: string | null;
  /** Start strictly after this row; null for the first page. */
  after: KeysetCursor | null;
  /** The page size plus one, to learn whether there is a next page. */
  limit: number;
}

export interface ChargeRepository {
  list(query: ListChargesQuery): Promise<ChargeRow[]>;
}

// Bigints as text, as in the charges a subscription aggregates, so one ChargeRow and one renderer serve both.
const COLUMNS = `ch.id, ch.subscription_id, ch.status, ch.amount_minor::text AS amount_minor,
  ch.amount_refunded_minor::text AS amount_refunded_minor, ch.currency, ch.order_id, ch.failure_code,
  ch.failure_message, ch.scheduled_at, ch.processed_at, ch.created_at, ch.version::text AS version`;

interface Statement {
  name: string;
  text: string;
}

/**
 * One named statement per (filter, first page or not), each planned for its index:
 * charges_merchant_keyset, or charges_merchant_subscription for one subscription.
 */
function listStatement(bySubscription: boolean, afterCursor: boolean): Statement {
  const walk = keysetWalk("ch", bySubscription ? { column: "subscription_id", type: "text" } : null, afterCursor);
  return {
    name: `query_list_charges_${bySubscription ? "subscription" : "all"}_${afterCursor ? "after" : "first"}`,
    text: plannedPage(`SELECT ${COLUMNS} FROM charges ch WHERE ${walk.conditions.join(" AND ")}`, "ch", walk.order, walk.limit, MAX_LIST_ROWS),
  };
}

const LIST_STATEMENTS = {
  all: { first: listStatement(false, false), after: listStatement(false, true) },
  subscription: { first: listStatement(true, false), after: listStatement(true, true) },
};

/** Parameterised SQL over one merchant's charges; every statement has merchant_id = $1. */
export function createChargeRepository(pool: Pool): ChargeRepository {
  return {
    async list(query) {
      const variants = query.subscriptionId === null ? LIST_STATEMENTS.all : LIST_STATEMENTS.subscription;
      const statement = query.after === null ? variants.first : variants.after;
      requireLimitWithin(query.limit, MAX_LIST_ROWS);
      const values: unknown[] = [query.merchantId];
      if (query.subscriptionId !== null) values.push(query.subscriptionId);
      if (query.after !== null) values.push(query.after.at, query.after.id);
      values.push(query.limit);
      const result = await pool.query<ChargeRow>({ ...statement, values });
      return result.rows;
    },
  };
}

/** The statements' SQL, for tests that EXPLAIN them. */
export const chargeStatements = { list: LIST_STATEMENTS };
