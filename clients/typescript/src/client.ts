import createClient from "openapi-fetch";
import { errorFor } from "./errors.ts";
import type { components, operations, paths } from "./generated/schema.ts";
import { createRetryingFetch, DEFAULT_RETRY_POLICY, systemTimers, type FetchFunction, type Timers } from "./retry.ts";

type Schemas = components["schemas"];
export type Money = Schemas["Money"];
export type Subscription = Schemas["Subscription"];
export type SubscriptionWithCharges = Schemas["SubscriptionWithCharges"];
export type Charge = Schemas["Charge"];
export type Order = Schemas["Order"];
export type LineItem = Schemas["LineItem"];
/** One feed item: byte for byte the body a webhook carries for the same event. */
export type Event = Schemas["Event"];
export type SubscriptionEvent = Schemas["SubscriptionEvent"];
export type ChargeEvent = Schemas["ChargeEvent"];
export type OrderEvent = Schemas["OrderEvent"];
export type EventType = Event["type"];
export type EventPage = Schemas["EventList"];

/** One page of a list: `next_cursor` (null on the last page) continues after it. */
export interface Page<Item> {
  object: "list";
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

type QueryOf<Operation extends keyof operations> = NonNullable<operations[Operation]["parameters"]["query"]>;
export type ListSubscriptionsParams = QueryOf<"listSubscriptions">;
export type ListChargesParams = QueryOf<"listCharges">;
export type ListOrdersParams = QueryOf<"listOrders">;
export type ListEventsParams = Omit<QueryOf<"listEvents">, "types"> & {
  /** Only these event types: an array, or the API's comma-separated form. */
  types?: readonly EventType[] | string;
};

/** The lists a walk can go through, with their filters and items. */
export interface Lists {
  subscriptions: { params: ListSubscriptionsParams; item: Subscription };
  charges: { params: ListChargesParams; item: Charge };
  orders: { params: ListOrdersParams; item: Order };
}
export type ListName = keyof Lists;

export interface RequestOptions {
  /** Aborts the request, its retries and the waits between them. */
  signal?: AbortSignal;
}

export interface WalkOptions extends RequestOptions {
  /** Fetch the next page while the caller handles this one (default true). */
  prefetch?: boolean;
}

export interface FollowOptions extends RequestOptions {
  /**
   * Where to start: a `next_cursor` stored from an earlier page, or "head" for what happens from now on.
   * Absent: from the oldest event the feed retains.
   */
  cursor?: string;
  types?: readonly EventType[] | string;
  /** Long-poll seconds for an empty page (0–30, default 30). */
  wait?: number;
  /** Events per page (1–1000, default 100). */
  limit?: number;
  /**
   * Retries of one page request before giving up. Default: no limit, so that following survives an
   * outage of any length (the signal stops it); non-retryable answers (4xx, 410) throw at once.
   */
  maxRetries?: number;
}

/** Events in feed order; `cursor` is where to resume so that nothing after the events handled so far is lost. */
export interface Follow extends AsyncIterable<Event> {
  /**
   * After the last event of a page: that page's next_cursor. Within a page: the cursor the page was read
   * from, so a resume reads the rest of the page again (events already handled repeat; none is lost).
   */
  readonly cursor: string | undefined;
}

export interface SubdataClientOptions {
  /** The API's URL, `https://host/api/v1`; a bare origin (`http://127.0.0.1:8080`) gets `/api/v1` added. */
  baseUrl: string;
  /** sds_…: sent as `Authorization: Bearer`. */
  apiKey: string;
  /** Replaces globalThis.fetch (a proxy agent, instrumentation, tests). */
  fetch?: FetchFunction;
  /** Retries of a request after its first attempt on 429, 5xx and network errors (default 5). */
  maxRetries?: number;
  /** Per-attempt deadline for the response headers (default 30 s; long polls add their wait). */
  timeoutMs?: number;
  /** Goes in front of this client's own User-Agent product. */
  userAgent?: string;
  /** Clock, sleep and jitter source; the system's unless given. */
  timers?: Timers;
}

export interface SubdataClient {
  readonly baseUrl: string;
  /** Retries of one request after its first attempt (the client's `maxRetries`). */
  readonly maxRetries: number;
  listSubscriptions(params?: ListSubscriptionsParams, options?: RequestOptions): Promise<Page<Subscription>>;
  getSubscription(id: string, options?: RequestOptions): Promise<SubscriptionWithCharges>;
  listCharges(params?: ListChargesParams, options?: RequestOptions): Promise<Page<Charge>>;
  listOrders(params?: ListOrdersParams, options?: RequestOptions): Promise<Page<Order>>;
  listEvents(params?: ListEventsParams, options?: RequestOptions & { maxRetries?: number }): Promise<EventPage>;
  /** Every item of a list, page after page (from `params.cursor` when given), until the last page. */
  walk<L extends ListName>(list: L, params?: Lists[L]["params"], options?: WalkOptions): AsyncIterable<Lists[L]["item"]>;
  /** The pages of a walk; store a page's `next_cursor` with what you did with it to resume after it. */
  walkPages<L extends ListName>(list: L, params?: Lists[L]["params"], options?: WalkOptions): AsyncIterable<Page<Lists[L]["item"]>>;
  /** Every event from `cursor` on, forever: long polls while the feed is quiet, reconnects after failures. */
  follow(options?: FollowOptions): Follow;
  /** The feed's pages from `cursor` on, forever, empty ones included (has_more false: caught up for now). */
  followPages(options?: FollowOptions): AsyncIterable<EventPage>;
}

const USER_AGENT = "subdata-client-typescript/1";
export const DEFAULT_FOLLOW_WAIT_SECONDS = 30;
const DEFAULT_TIMEOUT_MS = 30_000;

/** `http://host:8080` → `http://host:8080/api/v1`; a URL with a path is taken as the API's URL as it is. */
export function apiBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new TypeError(`the API URL must be http(s), got ${parsed.protocol}`);
  const path = parsed.pathname.replace(/\/+$/, "");
  return `${parsed.origin}${path === "" ? "/api/v1" : path}`;
}

function typesParameter(types: readonly EventType[] | string | undefined): string | undefined {
  if (types === undefined) return undefined;
  return typeof types === "string" ? types : types.join(",");
}

const listPaths = { subscriptions: "/subscriptions", charges: "/charges", orders: "/orders" } as const;

export function createSubdataClient(options: SubdataClientOptions): SubdataClient {
  const baseUrl = apiBaseUrl(options.baseUrl);
  const timers = options.timers ?? systemTimers;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const policy = { ...DEFAULT_RETRY_POLICY, ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}) };
  const retrying = createRetryingFetch({
    fetch: options.fetch ?? ((request) => globalThis.fetch(request)),
    policy,
    timers,
    timeoutMs,
  });
  const api = createClient<paths>({
    baseUrl,
    fetch: (request) => retrying(request),
    headers: {
      Authorization: `Bearer ${options.apiKey}`,
      Accept: "application/json",
      "User-Agent": options.userAgent ? `${options.userAgent} ${USER_AGENT}` : USER_AGENT,
    },
  });

  /** The body of a 2xx, or the typed error the problem describes. */
  async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok || data === undefined) throw errorFor(response.status, error, response.headers.get("request-id") ?? undefined);
    return data;
  }

  const client: SubdataClient = {
    baseUrl,
    maxRetries: policy.maxRetries,
    listSubscriptions: (params = {}, requestOptions = {}) =>
      unwrap(api.GET("/subscriptions", { params: { query: params }, signal: requestOptions.signal })) as Promise<Page<Subscription>>,
    getSubscription: (id, requestOptions = {}) => unwrap(api.GET("/subscriptions/{id}", { params: { path: { id } }, signal: requestOptions.signal })),
    listCharges: (params = {}, requestOptions = {}) =>
      unwrap(api.GET("/charges", { params: { query: params }, signal: requestOptions.signal })) as Promise<Page<Charge>>,
    listOrders: (params = {}, requestOptions = {}) =>
      unwrap(api.GET("/orders", { params: { query: params }, signal: requestOptions.signal })) as Promise<Page<Order>>,
    listEvents(params = {}, requestOptions = {}) {
      const { types, ...rest } = params;
      const typesValue = typesParameter(types);
      const query = { ...rest, ...(typesValue !== undefined ? { types: typesValue } : {}) };
      // A long poll holds the response up to `wait` seconds: its deadline is that much longer.
      const settings = { timeoutMs: timeoutMs + (rest.wait ?? 0) * 1000, maxRetries: requestOptions.maxRetries };
      return unwrap(api.GET("/events", { params: { query }, signal: requestOptions.signal, fetch: (request: Request) => retrying(request, settings) }));
    },

    walkPages<L extends ListName>(list: L, params?: Lists[L]["params"], walkOptions: WalkOptions = {}) {
      // The three lists share their shape (page envelope, limit and cursor); one typed path stands for them.
      const path = listPaths[list] as "/subscriptions";
      const read = (cursor: string | undefined, signal: AbortSignal) =>
        unwrap(
          api.GET(path, {
            params: { query: { ...(params as ListSubscriptionsParams), ...(cursor !== undefined ? { cursor } : {}) } },
            signal,
          }),
        ) as Promise<Page<Lists[L]["item"]>>;
      return pagesOf(read, params?.cursor, walkOptions, (page) => (page.has_more && page.next_cursor !== null ? page.next_cursor : undefined));
    },

    async *walk(list, params, walkOptions) {
      for await (const page of client.walkPages(list, params, walkOptions)) yield* page.data;
    },

    followPages(followOptions = {}) {
      const wait = followOptions.wait ?? DEFAULT_FOLLOW_WAIT_SECONDS;
      const read = (cursor: string | undefined, signal: AbortSignal) =>
        client.listEvents(
          {
            ...(cursor !== undefined ? { cursor } : {}),
            ...(followOptions.types !== undefined ? { types: followOptions.types } : {}),
            ...(followOptions.limit !== undefined ? { limit: followOptions.limit } : {}),
            wait,
          },
          { signal, maxRetries: followOptions.maxRetries ?? Infinity },
        );
      return pagesOf(read, followOptions.cursor, followOptions, (page) => page.next_cursor);
    },

    follow(followOptions = {}) {
      let cursor = followOptions.cursor;
      return {
        get cursor() {
          return cursor;
        },
        async *[Symbol.asyncIterator]() {
          for await (const page of client.followPages({ ...followOptions, cursor })) {
            for (const [index, event] of page.data.entries()) {
              if (index === page.data.length - 1) cursor = page.next_cursor;
              yield event;
            }
            cursor = page.next_cursor;
          }
        },
      };
    },
  };
  return client;
}

/**
 * Pages from `first` on, each read while the caller still handles the one before (when prefetching).
 * `nextOf` gives the cursor of the page after, or undefined at the end. The read ahead is aborted when
 * the caller stops early, so a page is never fetched for nobody.
 */
async function* pagesOf<P>(
  read: (cursor: string | undefined, signal: AbortSignal) => Promise<P>,
  first: string | undefined,
  options: WalkOptions,
  nextOf: (page: P) => string | undefined,
): AsyncGenerator<P> {
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const prefetch = options.prefetch ?? true;
  let pending: Promise<P> | undefined = read(first, signal);
  try {
    while (pending) {
      const page: P = await pending;
      const next = nextOf(page);
      pending = next === undefined ? undefined : prefetch ? read(next, signal) : undefined;
      // An abandoned read ahead must not surface as an unhandled rejection.
      pending?.catch(() => {});
      yield page;
      if (next !== undefined && !prefetch) pending = read(next, signal);
    }
  } finally {
    stop.abort();
  }
}
