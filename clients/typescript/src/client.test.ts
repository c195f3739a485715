import { describe, expect, it } from "vitest";
import { apiBaseUrl, createSubdataClient, type Event, type SubdataClientOptions, type Subscription } from "./client.ts";
import { CursorExpiredError, SubdataApiError, SubdataConnectionError } from "./errors.ts";
import type { Timers } from "./retry.ts";

/**
 * A fetch that answers from a script and records what it was asked; no network. Past the script it
 * answers nothing until the request is aborted, like a long poll on a quiet feed.
 */
function fakeFetch(script: Array<(request: Request) => Response | Promise<Response>>) {
  const requests: Request[] = [];
  const fetch = async (request: Request) => {
    requests.push(request);
    const next = script.shift();
    if (next) return next(request);
    return new Promise<Response>((_, reject) => {
      request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true });
    });
  };
  return { fetch, requests };
}

/** Sleeps return at once and move a fake clock; every wait is recorded. */
function fakeTimers(): Timers & { slept: number[] } {
  let now = 1_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    random: () => 0.5,
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason;
      slept.push(ms);
      now += ms;
    },
  };
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(
    JSON.stringify({
      type: `https://subdata.dev/problems/${code}`,
      title: code,
      status,
      detail: `because ${code}`,
      instance: "/api/v1/x",
      code,
      request_id: "req_1",
    }),
    {
      status,
      headers: { "content-type": "application/problem+json", "request-id": "req_1", ...headers },
    },
  );

const page = <T>(data: T[], nextCursor: string | null) => json({ object: "list", data, has_more: nextCursor !== null, next_cursor: nextCursor });
const eventPage = (data: unknown[], nextCursor: string, hasMore = false) => json({ object: "list", data, has_more: hasMore, next_cursor: nextCursor });

const subscription = (id: string) => ({ id, object: "subscription", version: 1 }) as unknown as Subscription;
const event = (id: string) =>
  ({
    id,
    type: "subscription.updated",
    timestamp: "2026-01-01T00:00:00.000Z",
    data: { object: subscription("sub_1"), previous_attributes: {} },
  }) as unknown as Event;

function clientWith(script: Parameters<typeof fakeFetch>[0], options: Partial<SubdataClientOptions> = {}) {
  const fake = fakeFetch(script);
  const timers = fakeTimers();
  const client = createSubdataClient({ baseUrl: "http://api.test", apiKey: "sds_key", fetch: fake.fetch, timers, ...options });
  return { client, timers, requests: fake.requests };
}

const queryOf = (request: Request) => Object.fromEntries(new URL(request.url).searchParams);

describe("the client's requests", () => {
  it("sends the key as a bearer token with its user agent to the API path under the base URL", async () => {
    const { client, requests } = clientWith([() => page([subscription("sub_1")], null)], { userAgent: "acme-sync/2" });
    const result = await client.listSubscriptions({ status: "ACTIVE", limit: 10 });
    expect(result.data.map((item) => item.id)).toEqual(["sub_1"]);
    const [request] = requests;
    expect(request!.url).toBe("http://api.test/api/v1/subscriptions?status=ACTIVE&limit=10");
    expect(request!.headers.get("authorization")).toBe("Bearer sds_key");
    expect(request!.headers.get("user-agent")).toBe("acme-sync/2 subdata-client-typescript/1");
  });

  it("takes a bare origin or the API's own URL as the base", () => {
    expect(apiBaseUrl("http://127.0.0.1:8080")).toBe("http://127.0.0.1:8080/api/v1");
    expect(apiBaseUrl("http://127.0.0.1:8080/")).toBe("http://127.0.0.1:8080/api/v1");
    expect(apiBaseUrl("https://example.com/subdata/api/v1/")).toBe("https://example.com/subdata/api/v1");
    expect(() => apiBaseUrl("ftp://example.com")).toThrow(/http\(s\)/);
    expect(() => apiBaseUrl("not a url")).toThrow(/not a URL/);
  });

  it("gets one subscription by id, escaping the path", async () => {
    const { client, requests } = clientWith([() => json({ ...subscription("sub_1"), charges: [] })]);
    const found = await client.getSubscription("sub_1");
    expect(found.charges).toEqual([]);
    expect(requests[0]!.url).toBe("http://api.test/api/v1/subscriptions/sub_1");
  });

  it("joins event types into the feed's comma-separated parameter", async () => {
    const { client, requests } = clientWith([() => eventPage([], "c1")]);
    await client.listEvents({ cursor: "head", types: ["order.created", "charge.deleted"] });
    expect(queryOf(requests[0]!)).toEqual({ cursor: "head", types: "order.created,charge.deleted" });
  });
});

describe("the client's errors", () => {
  it("throws a 4xx as a SubdataApiError carrying the problem, without retrying", async () => {
    const { client, requests } = clientWith([
      () =>
        new Response(
          JSON.stringify({
            type: "t",
            title: "Invalid parameter",
            status: 400,
            detail: "bad",
            instance: "/api/v1/orders",
            code: "invalid_parameter",
            request_id: "req_9",
            errors: [{ param: "limit", code: "out_of_range" }],
          }),
          { status: 400, headers: { "content-type": "application/problem+json", "request-id": "req_9" } },
        ),
    ]);
    const error = await client.listOrders({ limit: 500 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SubdataApiError);
    expect(error).not.toBeInstanceOf(CursorExpiredError);
    expect(error).toMatchObject({
      status: 400,
      code: "invalid_parameter",
      requestId: "req_9",
      problem: { errors: [{ param: "limit", code: "out_of_range" }] },
    });
    expect(requests).toHaveLength(1);
  });

  it("throws 401 invalid_api_key as a SubdataApiError", async () => {
    const { client } = clientWith([() => problem(401, "invalid_api_key", { "www-authenticate": 'Bearer realm="subdata"' })]);
    await expect(client.listCharges()).rejects.toMatchObject({ name: "SubdataApiError", status: 401, code: "invalid_api_key", requestId: "req_1" });
  });

  it("throws 410 cursor_expired as a CursorExpiredError", async () => {
    const { client } = clientWith([() => problem(410, "cursor_expired")]);
    const error = await client.listEvents({ cursor: "old" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CursorExpiredError);
    expect(error).toBeInstanceOf(SubdataApiError);
    expect((error as CursorExpiredError).code).toBe("cursor_expired");
  });

  it("names the API and the reason when it cannot be reached after the retries", async () => {
    const refused = () => {
      throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" }) });
    };
    const { client, requests, timers } = clientWith([refused, refused, refused], { maxRetries: 2 });
    const error = await client.listSubscriptions().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SubdataConnectionError);
    expect((error as Error).message).toMatch(/could not reach the subdata API at http:\/\/api\.test\/api\/v1\/subscriptions: ECONNREFUSED/);
    expect(requests).toHaveLength(3);
    expect(timers.slept).toHaveLength(2);
  });
});

describe("the client's retries", () => {
  it("waits the Retry-After of a 429, then retries", async () => {
    const { client, timers, requests } = clientWith([() => problem(429, "rate_limited", { "retry-after": "3" }), () => page([subscription("sub_1")], null)]);
    const result = await client.listSubscriptions();
    expect(result.data).toHaveLength(1);
    expect(requests).toHaveLength(2);
    expect(timers.slept).toEqual([3000]);
  });

  it("waits the Retry-After of a 503, then retries", async () => {
    const { client, timers } = clientWith([
      () => problem(503, "unavailable", { "retry-after": "1" }),
      () => problem(503, "unavailable", { "retry-after": "2" }),
      () => page([], null),
    ]);
    await client.listOrders();
    expect(timers.slept).toEqual([1000, 2000]);
  });

  it("backs off exponentially with jitter on other 5xx and on network errors", async () => {
    const { client, timers, requests } = clientWith([
      () => problem(500, "internal_error"),
      () => {
        throw new TypeError("fetch failed");
      },
      () => new Response("bad gateway", { status: 502 }),
      () => page([], null),
    ]);
    await client.listCharges();
    expect(requests).toHaveLength(4);
    // random() = 0.5: half the step plus a quarter of it; steps 250, 500, 1000 ms.
    expect(timers.slept).toEqual([187.5, 375, 750]);
  });

  it("keeps the back-off within its bound however many retries", async () => {
    const script = Array.from({ length: 12 }, () => () => new Response("", { status: 500 }));
    const { client, timers } = clientWith([...script, () => page([], null)], { maxRetries: 12 });
    await client.listCharges();
    expect(Math.max(...timers.slept)).toBeLessThanOrEqual(20_000);
    expect(timers.slept.at(-1)).toBe(15_000);
  });

  it("gives up on a 5xx after maxRetries with the last problem", async () => {
    const { client, requests } = clientWith([() => problem(503, "unavailable"), () => problem(503, "unavailable")], { maxRetries: 1 });
    await expect(client.listSubscriptions()).rejects.toMatchObject({ status: 503, code: "unavailable" });
    expect(requests).toHaveLength(2);
  });

  it("holds the next request back while the RateLimit field says the quota is used up", async () => {
    const { client, timers } = clientWith([
      () => json({ object: "list", data: [], has_more: false, next_cursor: null }, 200, { ratelimit: '"default";r=3;t=1' }),
      () => json({ object: "list", data: [], has_more: false, next_cursor: null }, 200, { ratelimit: '"default";r=0;t=2' }),
      () => page([], null),
    ]);
    await client.listSubscriptions();
    expect(timers.slept).toEqual([]);
    await client.listSubscriptions();
    expect(timers.slept).toEqual([]);
    await client.listSubscriptions();
    expect(timers.slept).toEqual([2000]);
  });
});

describe("walks", () => {
  it("yields every item across pages, passing each next_cursor with the same filters", async () => {
    const { client, requests } = clientWith([
      () => page([subscription("sub_1"), subscription("sub_2")], "c1"),
      () => page([subscription("sub_3")], "c2"),
      () => page([subscription("sub_4")], null),
    ]);
    const ids: string[] = [];
    for await (const item of client.walk("subscriptions", { status: "PAUSED", limit: 2 })) ids.push(item.id);
    expect(ids).toEqual(["sub_1", "sub_2", "sub_3", "sub_4"]);
    expect(requests.map(queryOf)).toEqual([
      { status: "PAUSED", limit: "2" },
      { status: "PAUSED", limit: "2", cursor: "c1" },
      { status: "PAUSED", limit: "2", cursor: "c2" },
    ]);
  });

  it("resumes a walk from a stored cursor", async () => {
    const { client, requests } = clientWith([() => page([{ id: "ord_9" }], null)]);
    const pages = [];
    for await (const each of client.walkPages("orders", { cursor: "stored", subscription_id: "sub_1" })) pages.push(each);
    expect(pages).toHaveLength(1);
    expect(new URL(requests[0]!.url).pathname).toBe("/api/v1/orders");
    expect(queryOf(requests[0]!)).toEqual({ cursor: "stored", subscription_id: "sub_1" });
  });

  it("reads no page beyond the one the caller stopped at when not prefetching", async () => {
    const { client, requests } = clientWith([() => page([{ id: "ch_1" }], "c1"), () => page([{ id: "ch_2" }], null)]);
    for await (const item of client.walk("charges", {}, { prefetch: false })) {
      expect(item.id).toBe("ch_1");
      break;
    }
    expect(requests).toHaveLength(1);
  });
});

describe("following the feed", () => {
  it("long-polls past empty pages and yields events in order, resuming from each next_cursor", async () => {
    const { client, requests } = clientWith([
      () => eventPage([], "h1"),
      () => eventPage([event("evt_1"), event("evt_2")], "p2", true),
      () => eventPage([event("evt_3")], "p3"),
      () => eventPage([], "p3"),
      () => eventPage([event("evt_4")], "p4"),
    ]);
    const follow = client.follow({ cursor: "head", types: ["subscription.updated"], limit: 500 });
    const seen: Array<[string, string | undefined]> = [];
    for await (const each of follow) {
      seen.push([each.id, follow.cursor]);
      if (each.id === "evt_4") break;
    }
    expect(seen).toEqual([
      ["evt_1", "h1"],
      ["evt_2", "p2"],
      ["evt_3", "p3"],
      ["evt_4", "p4"],
    ]);
    // The page after evt_4 was being read ahead (and was aborted when the loop stopped).
    expect(requests.map(queryOf).map((query) => query.cursor)).toEqual(["head", "h1", "p2", "p3", "p3", "p4"]);
    expect(queryOf(requests[0]!)).toEqual({ cursor: "head", types: "subscription.updated", limit: "500", wait: "30" });
  });

  it("resumes from the cursor a stopped follow exposed, re-reading only the unfinished page", async () => {
    const first = clientWith([() => eventPage([event("evt_1"), event("evt_2")], "p1"), () => eventPage([], "p1")]);
    const follow = first.client.follow({ cursor: "start", wait: 0 });
    for await (const each of follow) {
      if (each.id === "evt_1") break;
    }
    expect(follow.cursor).toBe("start");

    const second = clientWith([() => eventPage([event("evt_1"), event("evt_2")], "p1")]);
    const resumed = second.client.follow({ cursor: follow.cursor, wait: 0 });
    const ids: string[] = [];
    for await (const each of resumed) {
      ids.push(each.id);
      if (each.id === "evt_2") break;
    }
    expect(ids).toEqual(["evt_1", "evt_2"]);
    expect(resumed.cursor).toBe("p1");
    expect(queryOf(second.requests[0]!).cursor).toBe("start");
  });

  it("reconnects through any number of failures while following", async () => {
    const failures = Array.from({ length: 8 }, () => () => {
      throw new TypeError("fetch failed");
    });
    const { client, requests } = clientWith([...failures, () => eventPage([event("evt_1")], "p1")], { maxRetries: 1 });
    for await (const each of client.follow({ cursor: "c0" })) {
      expect(each.id).toBe("evt_1");
      break;
    }
    // Eight failures, the page, and the read ahead of the next page.
    expect(requests).toHaveLength(10);
  });

  it("stops following with a CursorExpiredError when the cursor is past retention", async () => {
    const { client } = clientWith([() => problem(410, "cursor_expired")]);
    const iterate = async () => {
      for await (const _ of client.follow({ cursor: "ancient" })) {
        // nothing arrives
      }
    };
    await expect(iterate()).rejects.toBeInstanceOf(CursorExpiredError);
  });

  it("stops waiting between retries when its signal aborts", async () => {
    const abort = new AbortController();
    const { client } = clientWith(
      [
        () => {
          abort.abort(new Error("shutting down"));
          throw new TypeError("fetch failed");
        },
      ],
      {},
    );
    const iterate = async () => {
      for await (const _ of client.followPages({ cursor: "c0", signal: abort.signal })) {
        // nothing arrives
      }
    };
    await expect(iterate()).rejects.toThrow("shutting down");
  });
});
