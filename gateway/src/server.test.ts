import { gunzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { eventTypeNames } from "@subdata/events";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { ErrorReason, errorWithReason, invalidArgument, invalidPageToken, unavailable } from "@subdata/runtime";
import { beforeEach, describe, expect, it } from "vitest";
import { fakeCharge, fakeOrder, fakeSubscription } from "./test-support/fake-upstreams.ts";
import { createOpenApiValidator } from "./test-support/openapi-validator.ts";
import { createTestGateway, KEY, KEY_ID, MERCHANT, OTHER_MERCHANT, type TestGateway } from "./test-support/test-gateway.ts";

const auth = { authorization: `Bearer ${KEY}` };
const openapi = createOpenApiValidator();

let t: TestGateway;

function get(url: string, headers: Record<string, string> = auth, method: "GET" | "HEAD" = "GET") {
  return t.gateway.inject({ method, url: `/api/v1${url}`, headers });
}

function seed(count: number, merchantId = MERCHANT) {
  for (let i = 0; i < count; i++) {
    t.fake.subscriptions.push(fakeSubscription({ id: `sub_${merchantId.slice(4)}${i}`, merchantId }));
  }
}

beforeEach(() => {
  t = createTestGateway();
});

describe("lists", () => {
  it("renders the list envelope, passing the upstream page token through as the cursor", async () => {
    seed(3);
    t.fake.behaviour.nextPageToken = "opaque.token";
    const response = await get("/subscriptions?limit=2&status=ACTIVE");
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ object: "list", has_more: true, next_cursor: "opaque.token" });
    expect(body.data).toHaveLength(2);
    expect(body.data[0]).toMatchObject({ object: "subscription", price: { amount: "19.99", currency: "USD" } });
    expect(t.fake.listSubscriptionCalls[0]).toMatchObject({ merchantId: MERCHANT, pageSize: 2, status: SubscriptionStatus.ACTIVE });
    openapi.validate("/subscriptions", "get", response);
  });

  it("answers has_more false and next_cursor null on the last page, with limit defaulting to 50", async () => {
    seed(1);
    const response = await get("/subscriptions");
    expect(response.json()).toMatchObject({ has_more: false, next_cursor: null });
    expect(t.fake.listSubscriptionCalls[0]?.pageSize).toBe(50);
    expect(t.fake.listSubscriptionCalls[0]?.pageToken).toBe("");
  });

  it("lists orders with money carrying its currency, filtered by subscription_id", async () => {
    t.fake.orders.push(fakeOrder({ id: "ord_1", merchantId: MERCHANT, subscriptionId: "sub_x", currencyCode: "KWD" }));
    const response = await get("/orders?subscription_id=sub_x&cursor=abc");
    expect(response.statusCode).toBe(200);
    const [order] = response.json().data;
    expect(order.total).toEqual({ amount: "2.599", currency: "KWD" });
    expect(order.line_items[0].unit_price).toEqual({ amount: "1.999", currency: "KWD" });
    expect(t.fake.listOrderCalls[0]).toMatchObject({ subscriptionId: "sub_x", pageToken: "abc" });
    openapi.validate("/orders", "get", response);
  });
});

describe("one subscription", () => {
  it("adds every charge, and validates against the OpenAPI document", async () => {
    t.fake.subscriptions.push(fakeSubscription({ id: "sub_1", merchantId: MERCHANT, price: { amountMinor: 1500n, currencyCode: "JPY" } }));
    t.fake.charges.push(fakeCharge({ id: "ch_1", subscriptionId: "sub_1", currencyCode: "JPY", amountMinor: 1500n }));
    const response = await get("/subscriptions/sub_1");
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.price).toEqual({ amount: "1500", currency: "JPY" });
    expect(body.charges).toHaveLength(1);
    expect(body.charges[0].amount).toEqual({ amount: "1500", currency: "JPY" });
    openapi.validate("/subscriptions/{id}", "get", response);
  });

  it("answers another merchant's id exactly like an unknown or malformed one", async () => {
    seed(1, OTHER_MERCHANT);
    const foreign = await get("/subscriptions/sub_b0");
    const unknown = await get("/subscriptions/sub_zzz");
    const malformed = await get("/subscriptions/not-an-id");
    for (const response of [foreign, unknown, malformed]) {
      expect(response.statusCode).toBe(404);
      expect(response.json().code).toBe("not_found");
      openapi.validate("/subscriptions/{id}", "get", response);
    }
    const shape = (body: Record<string, unknown>) => ({ ...body, instance: undefined, request_id: undefined });
    expect(shape(foreign.json())).toEqual(shape(unknown.json()));
    expect(shape(malformed.json())).toEqual(shape(unknown.json()));
  });
});

describe("query parameters", () => {
  it.each([
    ["/subscriptions?foo=1", [{ param: "foo", code: "unknown_parameter" }]],
    ["/subscriptions?limit=0", [{ param: "limit", code: "out_of_range" }]],
    ["/subscriptions?limit=201", [{ param: "limit", code: "out_of_range" }]],
    ["/subscriptions?limit=1e2", [{ param: "limit", code: "invalid_value" }]],
    ["/subscriptions?limit=%205", [{ param: "limit", code: "invalid_value" }]],
    ["/subscriptions?limit=abc", [{ param: "limit", code: "invalid_value" }]],
    ["/subscriptions?status=active", [{ param: "status", code: "invalid_value" }]],
    ["/subscriptions?status=", [{ param: "status", code: "invalid_value" }]],
    ["/subscriptions?cursor=", [{ param: "cursor", code: "invalid_value" }]],
    ["/subscriptions?limit=2&limit=3", [{ param: "limit", code: "repeated_parameter" }]],
    ["/subscriptions?subscription_id=sub_1", [{ param: "subscription_id", code: "unknown_parameter" }]],
    ["/orders?status=ACTIVE", [{ param: "status", code: "unknown_parameter" }]],
    ["/orders?subscription_id=ord_1", [{ param: "subscription_id", code: "invalid_format" }]],
    ["/subscriptions/sub_1?expand=charges", [{ param: "expand", code: "unknown_parameter" }]],
  ])("%s answers 400 invalid_parameter naming the parameter", async (url, errors) => {
    const response = await get(url);
    expect(response.statusCode).toBe(400);
    expect(response.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
    expect(response.json()).toMatchObject({ status: 400, code: "invalid_parameter", errors });
    expect(t.fake.listSubscriptionCalls).toHaveLength(0);
    const template = url.startsWith("/orders") ? "/orders" : url.startsWith("/subscriptions/") ? "/subscriptions/{id}" : "/subscriptions";
    openapi.validate(template, "get", response);
  });

  it("names several bad parameters at once", async () => {
    const response = await get("/subscriptions?foo=1&limit=900&status=NOPE");
    expect(response.json().errors).toEqual([
      { param: "foo", code: "unknown_parameter" },
      { param: "limit", code: "out_of_range" },
      { param: "status", code: "invalid_value" },
    ]);
  });

  it("maps an upstream INVALID_PAGE_TOKEN to 400 invalid_cursor", async () => {
    t.fake.behaviour.queryError = invalidPageToken();
    const response = await get("/subscriptions?cursor=tampered");
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: "invalid_cursor", errors: [] });
    openapi.validate("/subscriptions", "get", response);
  });

  it("maps upstream field violations back to public parameter names", async () => {
    t.fake.behaviour.queryError = invalidArgument("page_size", "must be between 1 and 200");
    const response = await get("/orders?limit=7");
    expect(response.json()).toMatchObject({ code: "invalid_parameter", errors: [{ param: "limit", code: "invalid_value" }] });
  });

  it("treats a violation of a field the client never set as our error (500), without leaking its message", async () => {
    t.fake.behaviour.queryError = invalidArgument("merchant_id", "is required; secret internals");
    const response = await get("/subscriptions");
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain("merchant_id");
    expect(response.body).not.toContain("internals");
    expect(response.json()).toMatchObject({ code: "internal_error", detail: "An unexpected error occurred." });
    openapi.validate("/subscriptions", "get", response);
  });
});

describe("authentication", () => {
  it.each([
    [{}, "missing_api_key", 'Bearer realm="subdata"'],
    [{ authorization: "Basic dXNlcjpwYXNz" }, "missing_api_key", 'Bearer realm="subdata"'],
    [{ authorization: "Bearer sds_unknown" }, "invalid_api_key", 'error="invalid_token"'],
  ])("%j answers 401 %s with WWW-Authenticate", async (headers, code, challenge) => {
    const response = await get("/subscriptions", headers);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ status: 401, code });
    expect(response.headers["www-authenticate"]).toContain(challenge);
    expect(response.headers["request-id"]).toBe(response.json().request_id);
    openapi.validate("/subscriptions", "get", response);
    expect(t.fake.audits).toHaveLength(0);
  });

  it.each([
    ["revoked", "revoked_api_key"],
    ["expired", "expired_api_key"],
  ] as const)("a %s key answers 401 %s with error=invalid_token", async (state, code) => {
    t.fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT, state });
    const response = await get("/subscriptions");
    expect(response.statusCode).toBe(401);
    expect(response.json().code).toBe(code);
    expect(response.headers["www-authenticate"]).toMatch(/^Bearer realm="subdata", error="invalid_token"/);
  });

  it("answers 503 when the auth service is unavailable, and caches no failure", async () => {
    t.fake.behaviour.authError = unavailable("auth database");
    const down = await get("/subscriptions");
    expect(down.statusCode).toBe(503);
    expect(down.json().code).toBe("unavailable");
    expect(down.headers["retry-after"]).toBe("1");
    openapi.validate("/subscriptions", "get", down);
    t.fake.behaviour.authError = undefined;
    expect((await get("/subscriptions")).statusCode).toBe(200);
    expect(t.fake.authCalls).toHaveLength(2);
  });

  it("serves a verified key from the cache without calling the auth service again", async () => {
    await get("/subscriptions");
    await get("/subscriptions");
    await get("/orders");
    expect(t.fake.authCalls).toHaveLength(1);
    expect(t.cache.size).toBe(1);
  });

  it("does not cache invalid keys", async () => {
    await get("/subscriptions", { authorization: "Bearer sds_nope" });
    await get("/subscriptions", { authorization: "Bearer sds_nope" });
    expect(t.fake.authCalls).toHaveLength(2);
    expect(t.cache.size).toBe(0);
  });

  it("asks the auth service every time while the revocation subscription is down", async () => {
    t.cache.setTrusted(false);
    await get("/subscriptions");
    await get("/subscriptions");
    expect(t.fake.authCalls).toHaveLength(2);
  });

  it("stops serving a key from the cache once it is evicted (revoked)", async () => {
    await get("/subscriptions");
    t.fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT, state: "revoked" });
    t.cache.evict(KEY_ID);
    const response = await get("/subscriptions");
    expect(response.json().code).toBe("revoked_api_key");
  });

  it("never caches a key past its expires_at", async () => {
    t.fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT, expiresAtMs: t.clock.now() + 5_000 });
    await get("/subscriptions");
    t.clock.advance(5_000);
    t.fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT, state: "expired" });
    expect((await get("/subscriptions")).json().code).toBe("expired_api_key");
  });

  it("never writes the key to the logs", async () => {
    await get("/subscriptions");
    await get("/subscriptions", { authorization: `Bearer ${KEY}x` });
    t.fake.behaviour.queryError = new ConnectError("boom", Code.Internal);
    await get("/subscriptions");
    expect(t.logs.length).toBeGreaterThan(0);
    expect(t.logs.join("\n")).not.toContain(KEY);
  });
});

describe("audit", () => {
  it("records successes with everything section 2 asks for", async () => {
    seed(2);
    const response = await get("/subscriptions?limit=5", { ...auth, "user-agent": "test-agent/1" });
    expect(t.fake.audits).toHaveLength(1);
    const [event] = t.fake.audits;
    expect(event).toMatchObject({
      merchantId: MERCHANT,
      apiKeyId: KEY_ID,
      requestId: response.headers["request-id"],
      method: "GET",
      route: "/v1/subscriptions",
      query: "limit=5",
      resourceIds: ["sub_a0", "sub_a1"],
      resultCount: 2,
      status: 200,
      clientIp: "127.0.0.1",
      userAgent: "test-agent/1",
    });
    expect(event?.occurredAt).toBeDefined();
    expect(event?.latency).toBeDefined();
  });

  it("records 4xx after authentication: 400, 404 (with the id asked for), 405 and HEAD", async () => {
    await get("/subscriptions?bogus=1");
    await get("/subscriptions/sub_missing");
    await t.gateway.inject({ method: "DELETE", url: "/api/v1/subscriptions/sub_1", headers: auth });
    await get("/orders", auth, "HEAD");
    expect(t.fake.audits.map((event) => [event.method, event.route, event.status, event.resourceIds, event.resultCount])).toEqual([
      ["GET", "/v1/subscriptions", 400, [], 0],
      ["GET", "/v1/subscriptions/{id}", 404, ["sub_missing"], 0],
      ["DELETE", "/v1/subscriptions/{id}", 405, [], 0],
      ["HEAD", "/v1/orders", 200, [], 0],
    ]);
  });

  it("writes the record before the response is sent", async () => {
    let release!: () => void;
    let called!: () => void;
    const recordCalled = new Promise<void>((resolve) => (called = resolve));
    t.fake.behaviour.recordRead = () => {
      called();
      return new Promise<void>((resolve) => (release = resolve));
    };
    let answered = false;
    const pending = get("/subscriptions").then((response) => {
      answered = true;
      return response;
    });
    await recordCalled;
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    release();
    expect((await pending).statusCode).toBe(200);
    expect(t.fake.audits).toHaveLength(1);
  });

  it("answers 503 with no data when the record cannot be written", async () => {
    seed(2);
    t.fake.behaviour.recordRead = async () => {
      throw unavailable("audit log");
    };
    const response = await get("/subscriptions", { ...auth, "accept-encoding": "gzip" });
    expect(response.statusCode).toBe(503);
    expect(response.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
    expect(response.json()).toMatchObject({ code: "unavailable", status: 503 });
    expect(response.body).not.toContain("sub_a0");
    openapi.validate("/subscriptions", "get", response);
  });

  it("sends the reads that arrive while an audit call is in flight together in the next call", async () => {
    seed(1);
    let releaseFirst!: () => void;
    let firstHeld = false;
    t.fake.behaviour.recordRead = () => {
      if (firstHeld) return Promise.resolve();
      firstHeld = true;
      return new Promise<void>((resolve) => (releaseFirst = resolve));
    };
    const first = get("/subscriptions");
    await expect.poll(() => firstHeld).toBe(true);
    const rest = Array.from({ length: 5 }, () => get("/subscriptions"));
    // Let the five pass their query call and reach their audit write while the first is still held.
    await expect.poll(() => t.fake.listSubscriptionCalls.length).toBe(6);
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    releaseFirst();
    const responses = await Promise.all([first, ...rest]);
    expect(responses.map((response) => response.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(t.fake.auditBatches).toEqual([1, 5]);
    expect(t.fake.audits).toHaveLength(6);
  });

  it("answers 503 for a read the audit service refused, and 200 for the others of its batch", async () => {
    seed(1);
    t.fake.behaviour.refuseRead = (read) => (read.userAgent === "refuse-me" ? "user_agent: refused" : undefined);
    const [refused, served] = await Promise.all([
      get("/subscriptions", { ...auth, "user-agent": "refuse-me" }),
      get("/subscriptions", { ...auth, "user-agent": "fine" }),
    ]);
    expect(refused.statusCode).toBe(503);
    expect(refused.body).not.toContain("sub_a0");
    expect(served.statusCode).toBe(200);
    expect(t.fake.audits.map((read) => read.userAgent)).toEqual(["fine"]);
  });

  it("falls back to one RecordRead per read when the auth service predates RecordReads", async () => {
    seed(1);
    t.fake.behaviour.recordReadsUnimplemented = true;
    const responses = await Promise.all([get("/subscriptions"), get("/subscriptions"), get("/subscriptions")]);
    expect(responses.map((response) => response.statusCode)).toEqual([200, 200, 200]);
    expect(t.fake.audits).toHaveLength(3);
    expect(t.fake.auditBatches).toEqual([]);
  });

  it("answers 503 even when the audit service fails with a non-Unavailable error", async () => {
    t.fake.behaviour.recordRead = async () => {
      throw new ConnectError("disk full", Code.Internal);
    };
    t.fake.subscriptions.push(fakeSubscription({ id: "sub_1", merchantId: MERCHANT }));
    const response = await get("/subscriptions/sub_1");
    expect(response.statusCode).toBe(503);
    expect(response.body).not.toContain("disk full");
    expect(response.body).not.toContain('"object":"subscription"');
  });
});

describe("errors", () => {
  it("answers unknown routes 404 not_found as a problem, without authentication", async () => {
    const response = await t.gateway.inject({ method: "GET", url: "/api/v1/customers" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: "not_found", instance: "/api/v1/customers" });
    expect(response.headers["request-id"]).toMatch(/^req_/);
  });

  it.each(["POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const)("answers %s on a known route 405 with Allow", async (method) => {
    const response = await t.gateway.inject({
      method,
      url: "/api/v1/orders",
      headers: { ...auth, "content-type": "application/json" },
      payload: method === "OPTIONS" ? undefined : "{not json",
    });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe("GET, HEAD");
    expect(response.json()).toMatchObject({ code: "method_not_allowed", status: 405 });
  });

  it.each([
    [unavailable("database"), 503, "unavailable"],
    [new ConnectError("slow", Code.DeadlineExceeded), 503, "unavailable"],
    [errorWithReason("credential", Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID), 500, "internal_error"],
    [new ConnectError("at /srv/x.ts:12 TypeError", Code.Internal), 500, "internal_error"],
  ])("maps upstream %s to %i %s with a generic detail", async (error, status, code) => {
    t.fake.behaviour.queryError = error;
    const response = await get("/subscriptions");
    expect(response.statusCode).toBe(status);
    expect(response.json().code).toBe(code);
    expect(response.body).not.toMatch(/srv|TypeError|credential|database|slow/);
  });
});

describe("headers", () => {
  it("sends Request-Id, Cache-Control and the RateLimit fields", async () => {
    const response = await get("/subscriptions");
    expect(response.headers["request-id"]).toMatch(/^req_[0-9a-f]{32}$/);
    expect(response.headers["cache-control"]).toBe("private, no-store");
    expect(response.headers["ratelimit-policy"]).toBe('"default";q=100;w=1');
    expect(response.headers.ratelimit).toBe('"default";r=99;t=1');
    expect(response.headers["access-control-expose-headers"]).toBe("Request-Id, RateLimit-Policy, RateLimit, Retry-After");
    expect(t.fake.audits[0]?.requestId).toBe(response.headers["request-id"]);
  });

  it("gives every response a fresh Request-Id, and never takes the client's", async () => {
    const first = await get("/subscriptions", { ...auth, "request-id": "mine" });
    const second = await get("/subscriptions");
    expect(first.headers["request-id"]).not.toBe("mine");
    expect(first.headers["request-id"]).not.toBe(second.headers["request-id"]);
  });

  it("answers 429 with Retry-After once the key's bucket is empty, and refills with time", async () => {
    t = createTestGateway({ SUBDATA_RATE_LIMIT_QUOTA: "3", SUBDATA_RATE_LIMIT_WINDOW_SECONDS: "1" });
    for (let i = 0; i < 3; i++) expect((await get("/subscriptions")).statusCode).toBe(200);
    const limited = await get("/subscriptions");
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe("rate_limited");
    expect(limited.headers["retry-after"]).toBe("1");
    expect(limited.headers.ratelimit).toBe('"default";r=0;t=1');
    expect(limited.headers["ratelimit-policy"]).toBe('"default";q=3;w=1');
    openapi.validate("/subscriptions", "get", limited);
    expect(t.fake.audits.at(-1)?.status).toBe(429);
    t.clock.advance(1_000);
    expect((await get("/subscriptions")).statusCode).toBe(200);
  });

  it("gzips large responses when asked, and leaves small ones alone", async () => {
    seed(20);
    const large = await get("/subscriptions", { ...auth, "accept-encoding": "gzip" });
    expect(large.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(large.rawPayload).toString()).data).toHaveLength(20);
    const small = await get("/subscriptions?limit=1", { ...auth, "accept-encoding": "gzip" });
    expect(small.headers["content-encoding"]).toBeUndefined();
    const notAsked = await get("/subscriptions");
    expect(notAsked.headers["content-encoding"]).toBeUndefined();
  });

  it("answers HEAD wherever GET answers, with the same headers and no body", async () => {
    seed(20);
    t.fake.subscriptions.push(fakeSubscription({ id: "sub_1", merchantId: MERCHANT }));
    for (const [url, headers] of [
      ["/subscriptions", auth],
      ["/subscriptions", { ...auth, "accept-encoding": "gzip" }],
      ["/subscriptions/sub_1", auth],
      ["/subscriptions/sub_missing", auth],
      ["/orders?limit=0", auth],
      ["/orders", {}],
      ["/openapi.json", { "accept-encoding": "gzip" }],
    ] as const) {
      const getResponse = await get(url, headers);
      const headResponse = await get(url, headers, "HEAD");
      expect(headResponse.statusCode).toBe(getResponse.statusCode);
      expect(headResponse.body).toBe("");
      const comparable = (h: Record<string, unknown>) => {
        const { "request-id": _id, date: _date, ratelimit: _rl, "content-length": _len, "transfer-encoding": _te, ...rest } = h;
        return rest;
      };
      expect(comparable(headResponse.headers)).toEqual(comparable(getResponse.headers));
    }
  });
});

describe("the OpenAPI document", () => {
  it("is served without authentication and describes every route and problem code", async () => {
    const response = await get("/openapi.json", {});
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe("3.1.0");
    expect(Object.keys(document.paths)).toEqual(["/subscriptions", "/subscriptions/{id}", "/charges", "/events", "/orders", "/openapi.json"]);
    expect(document.components.schemas.Problem.properties.code.enum).toContain("cursor_expired");
    expect(document.components.schemas.Problem.properties.code.enum).toContain("rate_limited");
    const statusParameter = document.paths["/subscriptions"].get.parameters.find((p: { name: string }) => p.name === "status");
    expect(statusParameter.schema.enum).toEqual(["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"]);
    const limit = document.paths["/orders"].get.parameters.find((p: { name: string }) => p.name === "limit");
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 200, default: 50 });
    expect(document.components.schemas.Subscription.properties.price).toEqual({ $ref: "#/components/schemas/Money" });
  });

  it("refuses query parameters with a documented 400, like every route", async () => {
    const response = await get("/openapi.json?version=2", {});
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: "invalid_parameter", errors: [{ param: "version", code: "unknown_parameter" }] });
    openapi.validate("/openapi.json", "get", response);
    openapi.validate("/openapi.json", "get", await get("/openapi.json", {}));
    openapi.validate("/openapi.json", "head", await get("/openapi.json", {}, "HEAD"));
  });

  it("tags every operation and webhook with one declared tag, and has a webhook for every event type", async () => {
    const document = (await get("/openapi.json", {})).json();
    const declared = document.tags.map((tag: { name: string; description: string }) => tag.name);
    expect(declared).toEqual([...declared].sort());
    const operations = [...Object.values(document.paths), ...Object.values(document.webhooks)].flatMap((item) =>
      Object.values(item as Record<string, { operationId: string; tags: string[] }>),
    );
    expect(operations.length).toBeGreaterThan(eventTypeNames.length);
    for (const operation of operations) {
      expect(operation.tags, operation.operationId).toHaveLength(1);
      expect(declared, operation.operationId).toContain(operation.tags[0]);
    }
    expect(Object.keys(document.webhooks)).toEqual(eventTypeNames);
    expect(document.webhooks["charge.updated"].post.requestBody.content["application/json"].schema.allOf[0]).toEqual({
      $ref: "#/components/schemas/ChargeEvent",
    });
    expect(document.info.license.identifier).toBeDefined();
    expect(document.info.contact.url).toMatch(/^https:/);
  });
});
