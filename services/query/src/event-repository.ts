import type { ChangeEventRow } from "@subdata/events";
import type { Pool } from "@subdata/runtime";
import { plannedPage, requireLimitWithin } from "./planned-page.ts";

/** The largest feed page a read may ask for. */
export const MAX_EVENT_PAGE_SIZE = 1000;
/** The most commits one type-filtered read looks through (EventPageQuery.commitWindow). */
export const TYPE_FILTER_COMMIT_WINDOW = 5_000;
/** The statements are planned for these (planned-page.ts): a page and the row after it, its commits and one more. */
const MAX_EVENT_ROWS = MAX_EVENT_PAGE_SIZE + 1;
const MAX_PAGE_COMMITS = MAX_EVENT_ROWS + 1;

/**
 * A place in one merchant's feed: after the event `seq` of the commit at `position`. Positions grow in
 * the order the merchant's transactions committed (change_commits); seq orders a transaction's events.
 */
export interface FeedPosition {
  position: bigint;
  seq: bigint;
}

/** The start of every feed: before the first commit. */
export const FEED_START: FeedPosition = { position: 0n, seq: 0n };

/** Larger than any seq: "after every event of this commit". */
export const END_OF_COMMIT = 9_223_372_036_854_775_807n;

export interface EventRow extends ChangeEventRow {
  position: bigint;
  seq: bigint;
}

export interface EventPageQuery {
  merchantId: string;
  after: FeedPosition;
  /** Only these event types, or null for all. */
  types: readonly string[] | null;
  /** Events to fetch: the page size plus one, to learn whether more follow. */
  limit: number;
  /**
   * How many commits one read may look through when filtering by type, so that a rare type costs a
   * bounded read, not a walk of the whole feed.
   */
  commitWindow: number;
}

export interface EventPage {
  rows: EventRow[];
  /**
   * Filtered reads only: the last commit position the read looked through, or null when none follows
   * `after`; whether the window was full (more commits may follow it).
   */
  scanned: { through: bigint | null; windowFull: boolean } | null;
}

export interface EventRepository {
  page(query: EventPageQuery): Promise<EventPage>;
  /** The merchant's last commit position (0 when it has none). */
  head(merchantId: string): Promise<bigint>;
  /** The last position retention removed for the merchant, or null when none was. */
  purgedThrough(merchantId: string): Promise<bigint | null>;
}

const COLUMNS = `e.id, e.merchant_id, e.resource_type, e.resource_id, e.event_type, e.version, e.occurred_at, e.payload,
  c.position, e.seq`;

/**
 * The merchant's commits after `after` in position order, each expanded (LATERAL, by the
 * change_events_transaction index) into its events in seq order, cut at the limit. The commits are cut
 * too: every commit has at least one event of its merchant, so limit + 1 commits always hold enough
 * (the first may be partly behind `after`). Both cuts keep the read O(page) for any feed length.
 */
function pageStatement(byType: boolean) {
  const typeCondition = byType ? "AND e.event_type = ANY($6::text[])" : "";
  const commits = plannedPage(
    "SELECT c.position, c.xid FROM change_commits c WHERE c.merchant_id = $1 AND c.position >= $2",
    "c",
    "c.position",
    "$5",
    byType ? TYPE_FILTER_COMMIT_WINDOW : MAX_PAGE_COMMITS,
  );
  return {
    name: `query_list_events_${byType ? "types" : "all"}`,
    text: `SELECT ${COLUMNS}
  FROM (${commits}) c
  CROSS JOIN LATERAL (
    SELECT e.* FROM change_events e
     WHERE e.xid = c.xid AND e.merchant_id = $1 AND (c.position > $2 OR e.seq > $3) ${typeCondition}
     ORDER BY e.seq LIMIT $4) e
 ORDER BY c.position, e.seq
 LIMIT $4`,
  };
}

const PAGE_ALL = pageStatement(false);
const PAGE_TYPES = pageStatement(true);

/** The last commit of a filtered read's window, and how many commits the window held. */
const WINDOW = {
  name: "query_list_events_window",
  text: `SELECT max(w.position) AS through, count(*) AS commits
  FROM (${plannedPage("SELECT c.position FROM change_commits c WHERE c.merchant_id = $1 AND c.position >= $2", "c", "c.position", "$3", TYPE_FILTER_COMMIT_WINDOW)}) w`,
};

const HEAD = {
  name: "query_events_head",
  text: "SELECT coalesce(max(c.position), 0) AS head FROM change_commits c WHERE c.merchant_id = $1",
};

const HORIZON = {
  name: "query_events_horizon",
  text: "SELECT h.purged_through FROM change_feed_horizons h WHERE h.merchant_id = $1",
};

/** Parameterised SQL over one merchant's change feed; every statement has merchant_id = $1. */
export function createEventRepository(pool: Pool): EventRepository {
  return {
    async page(query) {
      requireLimitWithin(query.limit, MAX_EVENT_ROWS);
      requireLimitWithin(query.commitWindow, TYPE_FILTER_COMMIT_WINDOW);
      const values: unknown[] = [query.merchantId, query.after.position, query.after.seq, query.limit];
      if (query.types === null) {
        values.push(query.limit + 1);
        const result = await pool.query<EventRow>({ ...PAGE_ALL, values });
        return { rows: result.rows, scanned: null };
      }
      values.push(query.commitWindow, query.types);
      const result = await pool.query<EventRow>({ ...PAGE_TYPES, values });
      const window = await pool.query<{ through: bigint | null; commits: bigint }>({
        ...WINDOW,
        values: [query.merchantId, query.after.position, query.commitWindow],
      });
      const { through, commits } = window.rows[0]!;
      return { rows: result.rows, scanned: { through, windowFull: commits >= BigInt(query.commitWindow) } };
    },
    async head(merchantId) {
      const result = await pool.query<{ head: bigint }>({ ...HEAD, values: [merchantId] });
      return result.rows[0]!.head;
    },
    async purgedThrough(merchantId) {
      const result = await pool.query<{ purged_through: bigint }>({ ...HORIZON, values: [merchantId] });
      return result.rows[0]?.purged_through ?? null;
    },
  };
}

/** The statements' SQL, for tests that EXPLAIN them. */
export const eventStatements = { pageAll: PAGE_ALL, pageTypes: PAGE_TYPES, window: WINDOW, head: HEAD, horizon: HORIZON };
