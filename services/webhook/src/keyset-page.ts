import { invalidPageToken, type KeysetPosition } from "@subdata/runtime";

/** A keyset position: a timestamp as exact Postgres text (never a JS Date) and the row id. */
export interface KeysetCursor {
  at: string;
  id: string;
}

export function cursorToPosition(cursor: KeysetCursor): KeysetPosition {
  return [cursor.at, cursor.id];
}

/** The inverse of cursorToPosition; any other shape is not a token of ours. */
export function positionToCursor(position: KeysetPosition): KeysetCursor {
  if (position.length !== 2) throw invalidPageToken();
  const [at, id] = position as [string, string];
  return { at, id };
}

/**
 * Splits the limit+1 rows a keyset query returned into the page and, when more exist, the cursor of the
 * page's last row (the extra row only proves there is a next page).
 */
export function splitPage<Row>(rows: readonly Row[], pageSize: number, keyOf: (row: Row) => KeysetCursor) {
  if (rows.length <= pageSize) return { page: rows, next: null };
  const page = rows.slice(0, pageSize);
  return { page, next: keyOf(page[page.length - 1]!) };
}
