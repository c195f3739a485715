import type { Pool } from "@subdata/runtime";
import { listPage, type SubscriptionScopedListQuery, subscriptionScopedListStatements } from "./subscription-scoped-list.ts";
import type { ChargeRow } from "./subscription-repository.ts";

export interface ChargeRepository {
  list(query: SubscriptionScopedListQuery): Promise<ChargeRow[]>;
}

// Bigints as text, as in the charges a subscription aggregates, so one ChargeRow and one renderer serve both.
const COLUMNS = `ch.id, ch.subscription_id, ch.status, ch.amount_minor::text AS amount_minor,
  ch.amount_refunded_minor::text AS amount_refunded_minor, ch.currency, ch.order_id, ch.failure_code,
  ch.failure_message, ch.scheduled_at, ch.processed_at, ch.created_at, ch.version::text AS version`;

const LIST_STATEMENTS = subscriptionScopedListStatements("charges", "ch", COLUMNS);

/** Parameterised SQL over one merchant's charges; every statement has merchant_id = $1. */
export function createChargeRepository(pool: Pool): ChargeRepository {
  return { list: (query) => listPage<ChargeRow>(pool, LIST_STATEMENTS, query) };
}

/** The statements' SQL, for tests that EXPLAIN them. */
export const chargeStatements = { list: LIST_STATEMENTS };
