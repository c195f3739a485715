import { type KeysetCursor, MAX_PAGE_SIZE } from "@subdata/runtime";

/** The most rows a list statement fetches: the largest page plus the row that tells whether more follow. */
export const MAX_LIST_ROWS = MAX_PAGE_SIZE + 1;

/** A statement prepared once per connection under its name. */
export interface NamedStatement {
  name: string;
  text: string;
}

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

/** A keyset walk of one merchant's rows: its WHERE conditions, its ORDER BY and the LIMIT's parameter. */
export interface KeysetWalk {
  conditions: string[];
  order: string;
  limit: string;
}

/**
 * The walk of `alias`'s rows with merchant_id = $1 by (created_at, id), optionally filtered by a column
 * equal to $2 (whose index is (merchant_id, column, created_at, id)), optionally after the cursor
 * ($2, $3, or $3, $4 with a filter).
 *
 * A filter is written as a range on its column, `column >= $2 AND column <= $2`, ordered by that column
 * first (the same order: it holds one value), so that only the filter's index returns the walk in
 * order. Written `column = $2`, the merchant-wide (merchant_id, created_at, id) index returns it in order
 * too, checking the filter row by row; a generic plan made for small merchants costs both at one row
 * and may take it, reading the rest of a large merchant for one page. After a cursor the range starts at
 * `(column, created_at, id) > ($2, cursor)`, which positions the index scan at the cursor; beside
 * `column = $2` the btree positions at the start of the filter's value and checks the comparison entry
 * by entry instead (776 blocks for a page 49,000 rows deep, against 5).
 */
export function keysetWalk(alias: string, filter: { column: string; type: string } | null, afterCursor: boolean): KeysetWalk {
  const a = alias;
  const conditions = [`${a}.merchant_id = $1`];
  if (filter === null) {
    if (afterCursor) conditions.push(`(${a}.created_at, ${a}.id) > ($2::timestamptz, $3::text)`);
    return { conditions, order: `${a}.created_at, ${a}.id`, limit: afterCursor ? "$4" : "$2" };
  }
  const column = `${a}.${filter.column}`;
  conditions.push(afterCursor ? `(${column}, ${a}.created_at, ${a}.id) > ($2::${filter.type}, $3::timestamptz, $4::text)` : `${column} >= $2::${filter.type}`);
  conditions.push(`${column} <= $2::${filter.type}`);
  return { conditions, order: `${column}, ${a}.created_at, ${a}.id`, limit: afterCursor ? "$5" : "$3" };
}

/** The values of a keysetWalk statement in its parameters' order: the merchant, the filter if any, the cursor if any, the limit. */
export function keysetWalkValues(merchantId: string, filter: unknown, after: KeysetCursor | null, limit: number): unknown[] {
  const values: unknown[] = [merchantId];
  if (filter !== null) values.push(filter);
  if (after !== null) values.push(after.at, after.id);
  values.push(limit);
  return values;
}
