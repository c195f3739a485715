import { createPool, type Pool } from "@subdata/runtime";

export interface QueryPoolOptions {
  /** A connection string of the subdata_query role. */
  connectionString: string;
  max?: number;
  statementTimeoutMs?: number;
  applicationName: string;
}

/**
 * The query service's pool: read-only sessions (a second guard behind the role's grants) that plan
 * each named statement once per connection (plan_cache_mode=force_generic_plan).
 *
 * Why generic plans: every statement here is a tenant-scoped keyset walk or a primary-key read, yet
 * Postgres kept re-planning them as custom plans at every execution: 0.25 ms of planning for a 50-row
 * page whose execution took 0.5 ms on the 1M dataset, against 0.02 ms for the generic plan
 * (docs/decisions.md).
 *
 * A generic plan is made once, without the values, for an average merchant; the statements are written
 * so that it is the right plan for every merchant, large or small (test/query/plans-per-tenant-mix.test.ts
 * runs each one this way on the statistics of several tenant mixes and counts the rows it reads):
 * - a page is cut under a constant LIMIT of the largest page (planned-page.ts), since a parameter LIMIT
 *   is guessed at a tenth of the average merchant;
 * - rows looked up per row of a page (a subscription's customer and plan) are LATERAL subqueries, so
 *   they stay primary-key probes whatever the planner guesses of the merchant's size;
 * - a filter is a range on its column and the walk is ordered by it first (keysetWalk), so that only
 *   the filter's index returns the rows in order and the cursor positions its scan.
 * The mode applies to every parameterised statement of these sessions, named or not: a query added to
 * this pool must follow the same rules.
 */
export function createQueryPool(options: QueryPoolOptions): Pool {
  return createPool({ ...options, readOnly: true, genericPlans: true });
}
