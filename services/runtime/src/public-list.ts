/**
 * The REST list object around a page's items (contract section 2):
 * {"object":"list","data":[…],"has_more":…,"next_cursor":…}. The query service renders the whole
 * object when the edge asks for it (render_public_list), so the edge sends the bytes it received; the
 * edge wraps the items itself only for a query service that answered with them alone.
 */

/** Everything before the items. */
export const PUBLIC_LIST_START = `{"object":"list","data":`;

/** Everything after a list page's items: next_cursor is null on the last page (no next page token). */
export function publicListEnd(nextPageToken: string): string {
  return nextPageToken === "" ? `,"has_more":false,"next_cursor":null}` : `,"has_more":true,"next_cursor":${JSON.stringify(nextPageToken)}}`;
}

/** Everything after a feed page's events: next_cursor is never null, has_more says whether events follow it now. */
export function publicFeedEnd(nextPageToken: string, hasMore: boolean): string {
  return `,"has_more":${hasMore},"next_cursor":${JSON.stringify(nextPageToken)}}`;
}
