import { invalidPageToken } from "./errors.ts";
import type { KeysetPosition } from "./page-token.ts";

/**
 * Where a keyset page starts: strictly after (or, for newest-first lists, before) this row. `at` is the
 * row's timestamp as the exact text Postgres sent — never a JS Date, which would drop microseconds and
 * skip or repeat rows that share a millisecond.
 */
export interface KeysetCursor {
  at: string;
  id: string;
}

/** The position a page token carries: [timestamp text, id]. */
export function cursorToPosition(cursor: KeysetCursor): KeysetPosition {
  return [cursor.at, cursor.id];
}

/** The inverse of cursorToPosition; a position of any other shape is not one of ours. */
export function positionToCursor(position: KeysetPosition): KeysetCursor {
  if (position.length !== 2) throw invalidPageToken();
  const [at, id] = position as [string, string];
  return { at, id };
}

/**
 * Splits the limit+1 rows a keyset query returned into the page and, when there is a next page, the
 * cursor of the page's last row (the extra row only proves that more exist).
 */
export function splitPage<Row>(rows: readonly Row[], pageSize: number, keyOf: (row: Row) => KeysetCursor): { page: readonly Row[]; next: KeysetCursor | null } {
  if (rows.length <= pageSize) return { page: rows, next: null };
  const page = rows.slice(0, pageSize);
  return { page, next: keyOf(page[page.length - 1]!) };
}
