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
 * Why generic plans: every statement here is a tenant-scoped keyset walk or a primary-key read whose
 * right plan does not depend on the values (an index range cut by LIMIT), yet Postgres kept
 * re-planning them as custom plans at every execution: 0.25 ms of planning for a 50-row page whose
 * execution took 0.5 ms on the 1M dataset, against 0.02 ms for the generic plan, which is the same plan
 * (docs/decisions.md). test/query/query-server.test.ts checks that each statement's generic plan can be
 * served by its keyset or primary-key index (on a tiny table, with scans and sorts priced out). The mode
 * applies to every parameterised statement of these sessions, named or not: a query added to this pool
 * must have one right plan whatever its values too.
 */
export function createQueryPool(options: QueryPoolOptions): Pool {
  return createPool({ ...options, readOnly: true, genericPlans: true });
}
