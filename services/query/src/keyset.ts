import { invalidPageToken, type KeysetPosition } from "@subdata/runtime";

/** Where a keyset page starts: strictly after this (created_at, id), created_at as exact Postgres text. */
export interface KeysetCursor {
  createdAt: string;
  id: string;
}

/** The position a page token carries: [created_at text, id]. */
export function cursorToPosition(cursor: KeysetCursor): KeysetPosition {
  return [cursor.createdAt, cursor.id];
}

/** The inverse of cursorToPosition; a position of any other shape is not one of ours. */
export function positionToCursor(position: KeysetPosition): KeysetCursor {
  if (position.length !== 2) throw invalidPageToken();
  const [createdAt, id] = position as [string, string];
  return { createdAt, id };
}

/**
 * Splits the limit+1 rows a keyset query returned into the page and, when there is a next page, the
 * cursor after its last row (the extra row only proves that more exist).
 */
export function splitPage<Row extends { created_at: string; id: string }>(
  rows: readonly Row[],
  pageSize: number,
): { page: readonly Row[]; next: KeysetCursor | null } {
  if (rows.length <= pageSize) return { page: rows, next: null };
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1]!;
  return { page, next: { createdAt: last.created_at, id: last.id } };
}
