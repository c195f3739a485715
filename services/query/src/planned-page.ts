import { MAX_PAGE_SIZE } from "@subdata/runtime";

/** The most rows a list statement fetches: the largest page plus the row that tells whether more follow. */
export const MAX_LIST_ROWS = MAX_PAGE_SIZE + 1;

/**
 * A keyset page, `${select} ORDER BY ${order} LIMIT ${limit}`, written so that a generic plan is made for
 * a page. The pool plans each statement once, without its values (pool.ts), and Postgres guesses a
 * parameter LIMIT at a tenth of the rows it cuts: a tenth of an average merchant's rows, which made
 * plans for thousands of rows (hash joins, sequential scans with a sort, JIT compilation) that grow
 * with the merchant. Under a constant LIMIT of the most rows the read may ask for, the planner sees a
 * page; the parameter still cuts it, and since LIMIT pulls rows on demand, only the rows returned are
 * read. `select` names its table `alias`, which `order` uses, so the same ORDER BY reads both levels.
 */
export function plannedPage(select: string, alias: string, order: string, limit: string, cap: number): string {
  return `SELECT * FROM (${select} ORDER BY ${order} LIMIT ${cap}) ${alias} ORDER BY ${order} LIMIT ${limit}`;
}

/** Refuses a limit the statements were not planned for: a page cut short would end a walk early. */
export function requireLimitWithin(limit: number, cap: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > cap) throw new RangeError(`a page of ${limit} rows is outside 1–${cap}`);
}
