import { create } from "@bufbuild/protobuf";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { EventService, ListEventsResponseSchema } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { changeEventFromRow, eventTypeOf, renderEventBody } from "@subdata/events";
import {
  ErrorReason,
  errorWithReason,
  invalidArgument,
  invalidPageToken,
  type KeysetPosition,
  type PageTokenBinding,
  type PageTokenCodec,
  publicFeedEnd,
  requireMerchantId,
} from "@subdata/runtime";
import type { ChangeNotifier } from "./change-notifier.ts";
import {
  END_OF_COMMIT,
  type EventRepository,
  type EventRow,
  FEED_START,
  type FeedPosition,
  MAX_EVENT_PAGE_SIZE,
  TYPE_FILTER_COMMIT_WINDOW,
} from "./event-repository.ts";
import { pageJson } from "./public-json.ts";

const DEFAULT_EVENT_PAGE_SIZE = 100;
const MAX_WAIT_SECONDS = 30;

export interface EventServiceDeps {
  events: EventRepository;
  pageTokens: PageTokenCodec;
  changes: ChangeNotifier;
}

const LIST_METHOD = `${EventService.typeName}/${EventService.method.listEvents.name}`;
const DECIMAL = /^(0|[1-9][0-9]{0,18})$/;

function positionToToken(position: FeedPosition): KeysetPosition {
  return [position.position.toString(), position.seq.toString()];
}

function tokenToPosition(position: KeysetPosition): FeedPosition {
  const [commit, seq] = position;
  if (position.length !== 2 || !DECIMAL.test(commit!) || !DECIMAL.test(seq!)) throw invalidPageToken();
  return { position: BigInt(commit!), seq: BigInt(seq!) };
}

function resolveEventPageSize(pageSize: number): number {
  if (pageSize === 0) return DEFAULT_EVENT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_EVENT_PAGE_SIZE) {
    throw invalidArgument("page_size", `must be between 1 and ${MAX_EVENT_PAGE_SIZE} (0 means ${DEFAULT_EVENT_PAGE_SIZE})`);
  }
  return pageSize;
}

/** Valid, distinct and sorted, so the token binding does not depend on how the caller spelled them. */
function resolveTypes(types: readonly string[]): string[] | null {
  if (types.length === 0) return null;
  for (const type of types) if (eventTypeOf(type) === undefined) throw invalidArgument("types", `unknown event type ${JSON.stringify(type)}`);
  return [...new Set(types)].sort();
}

interface ReadResult {
  rows: EventRow[];
  next: FeedPosition;
  hasMore: boolean;
}

/**
 * subdata.events.v1.EventService: one merchant's change feed, read-only. The order is the order in
 * which the merchant's transactions committed (change_commits, taken at commit under a per-merchant
 * lock), so a position a reader has passed is never filled in later (docs/decisions.md).
 */
export function createEventService(deps: EventServiceDeps): ServiceImpl<typeof EventService> {
  async function read(merchantId: string, after: FeedPosition, types: string[] | null, pageSize: number): Promise<ReadResult> {
    const { rows, scanned } = await deps.events.page({
      merchantId,
      after,
      types,
      limit: pageSize + 1,
      commitWindow: TYPE_FILTER_COMMIT_WINDOW,
    });
    if (rows.length > pageSize) {
      const last = rows[pageSize - 1]!;
      return { rows: rows.slice(0, pageSize), next: { position: last.position, seq: last.seq }, hasMore: true };
    }
    const last = rows.at(-1);
    let next: FeedPosition = last ? { position: last.position, seq: last.seq } : after;
    let hasMore = false;
    // A filtered read moves past the commits it looked through even when none matched, so the next
    // read does not look through them again.
    if (scanned?.through != null && scanned.through >= next.position) {
      next = { position: scanned.through, seq: END_OF_COMMIT };
      hasMore = scanned.windowFull;
    }
    return { rows, next, hasMore };
  }

  /** Retention removed events after `after`: the reader would miss them, so it must resynchronise. */
  async function requireRetained(merchantId: string, after: FeedPosition): Promise<void> {
    const purgedThrough = await deps.events.purgedThrough(merchantId);
    if (purgedThrough !== null && after.position < purgedThrough) {
      throw errorWithReason("events after this page token are past retention; resynchronise", Code.FailedPrecondition, ErrorReason.PAGE_TOKEN_EXPIRED);
    }
  }

  /** Reads; while nothing follows and time is left, waits for the merchant's next commit and reads again. */
  async function readOrWait(
    merchantId: string,
    after: FeedPosition,
    types: string[] | null,
    pageSize: number,
    waitSeconds: number,
    context: HandlerContext,
  ): Promise<ReadResult> {
    const deadline = performance.now() + waitSeconds * 1000;
    let current = after;
    for (;;) {
      // Subscribe before reading: a commit between the read and the wait still wakes us.
      const waiter = waitSeconds > 0 ? deps.changes.subscribe(merchantId) : undefined;
      try {
        const result = await read(merchantId, current, types, pageSize);
        const remaining = deadline - performance.now();
        if (result.rows.length > 0 || result.hasMore || !waiter || remaining <= 0 || context.signal.aborted) return result;
        current = result.next;
        await waitFor(waiter.changed, remaining, context.signal);
        if (context.signal.aborted || performance.now() >= deadline) return { ...result, next: current };
      } finally {
        waiter?.cancel();
      }
    }
  }

  return {
    async listEvents(request, context) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolveEventPageSize(request.pageSize);
      const types = resolveTypes(request.types);
      if (!Number.isInteger(request.waitSeconds) || request.waitSeconds < 0 || request.waitSeconds > MAX_WAIT_SECONDS) {
        throw invalidArgument("wait_seconds", `must be between 0 and ${MAX_WAIT_SECONDS}`);
      }
      const binding: PageTokenBinding = { method: LIST_METHOD, merchantId, filter: { types: types?.join(",") ?? "" } };

      if (request.startAtHead) {
        if (request.pageToken !== "") throw invalidArgument("page_token", "must be empty with start_at_head");
        const head = await deps.events.head(merchantId);
        const headToken = deps.pageTokens.encode(binding, positionToToken({ position: head, seq: END_OF_COMMIT }));
        return create(ListEventsResponseSchema, {
          nextPageToken: headToken,
          hasMore: false,
          ...(request.renderPublicJson ? pageJson("[]", request.renderPublicList, publicFeedEnd(headToken, false)) : {}),
        });
      }

      const after = request.pageToken === "" ? FEED_START : tokenToPosition(deps.pageTokens.decode(request.pageToken, binding));
      const result = await readOrWait(merchantId, after, types, pageSize, request.waitSeconds, context);
      // Checked after the read: a purge that raced it is seen here, so a page with a hole never leaves.
      if (request.pageToken !== "") await requireRetained(merchantId, after);

      const events = result.rows.map(changeEventFromRow);
      const nextPageToken = deps.pageTokens.encode(binding, positionToToken(result.next));
      if (request.renderPublicJson) {
        return create(ListEventsResponseSchema, {
          ...pageJson(`[${events.map(renderEventBody).join(",")}]`, request.renderPublicList, publicFeedEnd(nextPageToken, result.hasMore)),
          publicIds: events.map((event) => event.id),
          nextPageToken,
          hasMore: result.hasMore,
        });
      }
      return create(ListEventsResponseSchema, { events, nextPageToken, hasMore: result.hasMore });
    },
  };
}

function waitFor(changed: Promise<void>, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    void changed.then(done);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
