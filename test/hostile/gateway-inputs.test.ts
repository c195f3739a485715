import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../gateway/gateway-harness.ts";
import { hostileText } from "./hostile-text.ts";
import { expectDocumentedOutcome } from "./problem-invariants.ts";

/**
 * Property-based hostile input against the real read path (gateway over the real query and auth
 * services): every query parameter, path id, cursor and the Authorization header. Whatever arrives,
 * the answer is a 200 or a documented problem, never a 5xx or a stack trace.
 */

const RUNS = 120;
const BAD_REQUEST = { 400: ["invalid_parameter", "invalid_cursor"] } as const;

// Strings that break naive parsers: unicode, control characters, encodings, huge numbers, injections.
const nasty = hostileText([
  "",
  " ",
  "-1",
  "0",
  "201",
  "1e3",
  "0x10",
  "1.5",
  "NaN",
  "Infinity",
  "99999999999999999999999",
  "' OR 1=1 --",
  "%00",
  "\u0000",
  "../../etc/passwd",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j lookup string, sent as it is
  "${jndi:ldap://x}",
  "active",
  "ACTIVE ",
  "__proto__",
  "constructor",
  "[]",
  "{}",
  "sub_",
  "a".repeat(5_000),
]);

const encode = (value: string) => encodeURIComponent(value);

describe("hostile input at the gateway", () => {
  let h: GatewayHarness;
  let key = "";
  let subscriptionId = "";
  let cursor = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    const merchantId = await h.fixtures.merchant();
    for (let index = 0; index < 3; index++) subscriptionId = (await h.fixtures.subscription({ merchantId })).id;
    key = (await h.createKey(merchantId)).key;
    const first = await h.request(key, "/subscriptions?limit=1");
    cursor = (JSON.parse(first.body) as { next_cursor: string }).next_cursor;
    expect(cursor).toBeTruthy();
  });

  afterAll(async () => {
    await h?.close();
  });

  it("any query string on the list routes: 200 or 400 invalid_parameter/invalid_cursor", async () => {
    const param = fc.oneof(
      fc.constantFrom("limit", "cursor", "status", "subscription_id", "expand", "limit[]", "LIMIT", "__proto__"),
      fc.string({ maxLength: 12 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("/subscriptions", "/orders"), fc.array(fc.tuple(param, nasty), { maxLength: 4 }), async (route, pairs) => {
        const query = pairs.map(([name, value]) => `${encode(name)}=${encode(value)}`).join("&");
        const response = await h.request(key, `${route}?${query}`);
        expectDocumentedOutcome(response, BAD_REQUEST);
      }),
      { numRuns: RUNS },
    );
  });

  it("raw, badly encoded query strings: never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 60 }).map((text) => text.replace(/[#\s]/g, "")),
        async (raw) => {
          const response = await h.request(key, `/subscriptions?${raw.replace(/[^\x21-\x7e]/g, "%")}`);
          expectDocumentedOutcome(response, BAD_REQUEST);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("every limit outside 1–200 or not a plain integer is 400 invalid_parameter naming limit", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.integer({ min: -1_000_000, max: 0 }).map(String),
          fc.integer({ min: 201, max: 10_000_000 }).map(String),
          fc.constantFrom("1.0", "+5", " 5", "5 ", "05e0", ""),
        ),
        async (limit) => {
          const response = await h.request(key, `/subscriptions?limit=${encode(limit)}`);
          expectDocumentedOutcome(response, { 400: ["invalid_parameter"] });
          expect(response.statusCode).toBe(400);
          expect(JSON.parse(response.body).errors).toEqual(expect.arrayContaining([expect.objectContaining({ param: "limit" })]));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("any path id: 200 (its own), 404 not_found or 400, never a 5xx", async () => {
    // NUL and over-long ids are the two known defects below.
    const shortNasty = nasty.filter((id) => encode(id).length <= 100 && !id.includes("\u0000"));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          shortNasty,
          fc.string({ maxLength: 30 }).map((s) => `sub_${s}`),
        ),
        async (id) => {
          const response = await h.request(key, `/subscriptions/${encode(id)}`);
          expectDocumentedOutcome(response, { 400: ["invalid_parameter"], 404: ["not_found"] });
          if (response.statusCode === 200) expect(id).toBe(subscriptionId);
        },
      ),
      { numRuns: RUNS },
    );
  });

  // Known defect (reported): a path segment over Fastify's maxParamLength (100) is answered by the
  // router itself, before the hooks: 414 with Fastify's own JSON body, no problem+json, no Request-Id.
  // Flip to it() once the gateway maps framework errors to problems.
  it("a path id longer than 100 characters is still a documented problem", async () => {
    const response = await h.request(key, `/subscriptions/sub_${"a".repeat(120)}`);
    expectDocumentedOutcome(response, { 400: ["invalid_parameter"], 404: ["not_found"], 414: ["invalid_parameter"] });
  });

  // Known defect (reported): GET /subscriptions/%00 answers 503. The query service refuses the id
  // (400 would follow), but the gateway puts the raw id into the audit record's resource_ids
  // (gateway/src/routes.ts:90), which the auth service rejects for its NUL (audit-record.ts:24), and
  // a failed audit write is a 503. Flip to it() once ids are validated before they are audited.
  it("a path id with a NUL byte is a 400 or 404 problem, not a 503", async () => {
    const response = await h.request(key, "/subscriptions/%00");
    expectDocumentedOutcome(response, { 400: ["invalid_parameter"], 404: ["not_found"] });
  });

  it("tampered, truncated or foreign cursors: 400 invalid_cursor", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ minLength: 1, maxLength: 200 }),
          fc.base64String({ minLength: 4, maxLength: 200 }),
          fc.nat({ max: cursor.length - 1 }).chain((at) =>
            fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".split("")).map((char) => {
              const flipped = cursor.slice(0, at) + char + cursor.slice(at + 1);
              return flipped === cursor ? `${cursor}x` : flipped;
            }),
          ),
          fc.nat({ max: cursor.length - 1 }).map((length) => cursor.slice(0, length)),
        ),
        async (bad) => {
          const response = await h.request(key, `/subscriptions?limit=1&cursor=${encode(bad)}`);
          expectDocumentedOutcome(response, BAD_REQUEST);
          expect(response.statusCode).toBe(400);
        },
      ),
      { numRuns: RUNS },
    );
    // A genuine cursor on another route or with other filters is refused too.
    expectDocumentedOutcome(await h.request(key, `/orders?cursor=${encode(cursor)}`), { 400: ["invalid_cursor"] });
    expectDocumentedOutcome(await h.request(key, `/subscriptions?status=ACTIVE&cursor=${encode(cursor)}`), { 400: ["invalid_cursor"] });
  });

  it("any Authorization header: 401 with a documented code and WWW-Authenticate, never a 5xx", async () => {
    const header = fc.oneof(
      nasty,
      nasty.map((value) => `Bearer ${value}`),
      fc.stringMatching(/^sds_[A-Za-z0-9]{38}$/).map((value) => `Bearer ${value}`),
      fc.constantFrom("Bearer", "Bearer ", "bearer", "Basic dXNlcjpwYXNz", `Bearer ${"sds_".padEnd(4_000, "A")}`, "Bearer sds_x Bearer sds_y"),
    );
    await fc.assert(
      fc.asyncProperty(
        header.filter((value) => !/[\r\n\u0000-\u001f\u007f-\uffff]/.test(value)),
        async (authorization) => {
          const response = await h.gateway.inject({ method: "GET", url: "/api/v1/subscriptions", headers: { authorization } });
          expectDocumentedOutcome(response, { 401: ["missing_api_key", "invalid_api_key"] });
          expect(response.statusCode).toBe(401);
          expect(response.headers["www-authenticate"]).toMatch(/^Bearer/);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("other methods on known routes: 405 with Allow; unknown routes: 404; both as problems", async () => {
    for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const) {
      const response = await h.gateway.inject({ method, url: "/api/v1/subscriptions", headers: { authorization: `Bearer ${key}` }, payload: "{}" });
      expect(response.statusCode, method).toBe(method === "OPTIONS" ? response.statusCode : 405);
      if (response.statusCode === 405) expect(response.headers.allow).toBe("GET, HEAD");
      expect(response.statusCode).toBeLessThan(500);
    }
    const unknown = await h.request(key, "/nothing/here");
    expectDocumentedOutcome(unknown, { 404: ["not_found"] });
  });
});
