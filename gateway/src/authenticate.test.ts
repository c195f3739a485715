import { unavailable } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { createOpenApiValidator } from "./test-support/openapi-validator.ts";
import { createTestGateway, KEY, KEY_ID, MERCHANT, type TestGateway } from "./test-support/test-gateway.ts";

const openapi = createOpenApiValidator();
const OTHER_KEY = "sds_abcdefghij0123456789ABCDEFGHIJ01abcdef";

function request(t: TestGateway, ip: string, headers: Record<string, string> = {}) {
  return t.gateway.inject({ method: "GET", url: "/api/v1/subscriptions", headers, remoteAddress: ip });
}
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe("failed authentications per client address", () => {
  function gateway(environment: NodeJS.ProcessEnv = {}) {
    return createTestGateway({ SUBDATA_AUTH_FAILURE_QUOTA: "3", SUBDATA_AUTH_FAILURE_WINDOW_SECONDS: "60", ...environment });
  }

  it("after the quota of bad keys from one address, answers 429 without asking the auth service", async () => {
    const t = gateway();
    for (let i = 0; i < 3; i++) {
      const refused = await request(t, "203.0.113.9", bearer("sds_nope"));
      expect(refused.statusCode).toBe(401);
      expect(refused.headers["ratelimit-policy"]).toBe('"auth_failures";q=3;w=60');
      expect(refused.headers.ratelimit).toBe(`"auth_failures";r=${2 - i};t=${20 * (i + 1)}`);
    }
    expect(t.fake.authCalls).toHaveLength(3);

    const limited = await request(t, "203.0.113.9", bearer("sds_nope"));
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
    expect(limited.json()).toMatchObject({ status: 429, code: "rate_limited", request_id: limited.headers["request-id"] });
    expect(limited.json().detail).toContain("failed authentications");
    expect(limited.headers["retry-after"]).toBe("20");
    expect(limited.headers["ratelimit-policy"]).toBe('"auth_failures";q=3;w=60');
    expect(limited.headers.ratelimit).toBe('"auth_failures";r=0;t=60');
    expect(limited.headers["www-authenticate"]).toBeUndefined();
    openapi.validate("/subscriptions", "get", limited);
    // Neither a key nor a missing header from that address reaches the auth service now.
    expect((await request(t, "203.0.113.9", bearer("sds_other"))).statusCode).toBe(429);
    expect((await request(t, "203.0.113.9")).statusCode).toBe(429);
    expect(t.fake.authCalls).toHaveLength(3);
    expect(t.fake.audits).toHaveLength(0);

    // Another address is unaffected; the window refills.
    expect((await request(t, "198.51.100.7", bearer("sds_nope"))).statusCode).toBe(401);
    t.clock.advance(20_000);
    expect((await request(t, "203.0.113.9", bearer("sds_nope"))).statusCode).toBe(401);
  });

  it("never counts successful authentications", async () => {
    const t = gateway();
    t.fake.keys.set(OTHER_KEY, { apiKeyId: "key_b", merchantId: MERCHANT });
    // The cache would hide the auth calls; distrusting it makes every request a real authentication.
    t.cache.setTrusted(false);
    for (let i = 0; i < 10; i++) {
      const ok = await request(t, "203.0.113.9", bearer(i % 2 ? KEY : OTHER_KEY));
      expect(ok.statusCode).toBe(200);
      expect(ok.headers["ratelimit-policy"]).toMatch(/^"default"/);
    }
    expect(t.fake.authCalls).toHaveLength(10);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await request(t, "203.0.113.9", bearer("sds_nope"))).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it("still serves a key that authenticated before from a throttled address", async () => {
    const t = gateway();
    t.cache.setTrusted(false);
    expect((await request(t, "203.0.113.9", bearer(KEY))).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) await request(t, "203.0.113.9", bearer("sds_nope"));
    expect((await request(t, "203.0.113.9", bearer("sds_nope"))).statusCode).toBe(429);
    const known = await request(t, "203.0.113.9", bearer(KEY));
    expect(known.statusCode).toBe(200);
    expect(t.fake.authCalls.at(-1)?.key).toBe(KEY);
    // Once revoked, the key is refused once and then throttled like any other.
    t.fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT, state: "revoked" });
    expect((await request(t, "203.0.113.9", bearer(KEY))).statusCode).toBe(401);
    expect((await request(t, "203.0.113.9", bearer(KEY))).statusCode).toBe(429);
  });

  it("does not charge the client when the auth service is down", async () => {
    const t = gateway();
    t.fake.behaviour.authError = unavailable("auth database");
    for (let i = 0; i < 5; i++) expect((await request(t, "203.0.113.9", bearer("sds_nope"))).statusCode).toBe(503);
    t.fake.behaviour.authError = undefined;
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await request(t, "203.0.113.9", bearer("sds_nope"))).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it("counts the client X-Forwarded-For names when the proxy is trusted, the socket address when not", async () => {
    const trusting = gateway({ SUBDATA_TRUST_PROXY: "10.0.0.0/8" });
    for (let i = 0; i < 3; i++) await request(trusting, "10.1.2.3", { ...bearer("sds_nope"), "x-forwarded-for": "203.0.113.9" });
    expect((await request(trusting, "10.1.2.3", { ...bearer("sds_nope"), "x-forwarded-for": "203.0.113.9" })).statusCode).toBe(429);
    expect((await request(trusting, "10.1.2.3", { ...bearer("sds_nope"), "x-forwarded-for": "198.51.100.7" })).statusCode).toBe(401);
    expect(trusting.fake.authCalls.at(-1)?.clientIp).toBe("198.51.100.7");

    // Untrusted: a client cannot get a fresh budget by writing its own X-Forwarded-For.
    const direct = gateway();
    for (let i = 0; i < 3; i++) await request(direct, "203.0.113.9", { ...bearer("sds_nope"), "x-forwarded-for": `198.51.100.${i}` });
    expect((await request(direct, "203.0.113.9", { ...bearer("sds_nope"), "x-forwarded-for": "198.51.100.99" })).statusCode).toBe(429);
  });
});

describe("a missing Authorization header", () => {
  it.each([{}, { authorization: "Basic dXNlcjpwYXNz" }])("%j goes to the security log through the auth service and answers 401", async (headers) => {
    const t = createTestGateway();
    const response = await t.gateway.inject({
      method: "GET",
      url: "/api/v1/subscriptions",
      headers: { ...headers, "user-agent": "probe/1" },
      remoteAddress: "203.0.113.9",
    });
    expect(response.statusCode).toBe(401);
    expect(response.json().code).toBe("missing_api_key");
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="subdata"');
    expect(t.fake.authCalls).toEqual([
      expect.objectContaining({ key: "", clientIp: "203.0.113.9", userAgent: "probe/1", requestId: response.headers["request-id"] }),
    ]);
  });

  it("still answers 401 missing_api_key when the security log cannot be reached, and logs it", async () => {
    const t = createTestGateway();
    t.fake.behaviour.authError = unavailable("auth down");
    const response = await request(t, "203.0.113.9");
    expect(response.statusCode).toBe(401);
    expect(response.json().code).toBe("missing_api_key");
    expect(t.logs.some((line) => line.includes("missing API key not recorded in the security log"))).toBe(true);
  });

  it("counts against the same per-address budget as bad keys", async () => {
    const t = createTestGateway({ SUBDATA_AUTH_FAILURE_QUOTA: "2", SUBDATA_AUTH_FAILURE_WINDOW_SECONDS: "60" });
    expect((await request(t, "203.0.113.9")).statusCode).toBe(401);
    expect((await request(t, "203.0.113.9", bearer("sds_nope"))).statusCode).toBe(401);
    expect((await request(t, "203.0.113.9")).statusCode).toBe(429);
    expect(t.fake.authCalls).toHaveLength(2);
  });
});
