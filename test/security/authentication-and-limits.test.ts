import { readFileSync } from "node:fs";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createServiceTransport } from "@subdata/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, pollUntil, startGatewayHarness } from "../gateway/gateway-harness.ts";
import { type RunningWebhookServer, startWebhookServer } from "../webhook-api/webhook-server.ts";

/**
 * OWASP API2 (broken authentication) and API4 (unrestricted resource consumption) at the gateway,
 * and the internal RPCs' service credential.
 */

describe("authentication at the gateway", () => {
  let h: GatewayHarness;
  let merchantId = "";

  beforeAll(async () => {
    h = await startGatewayHarness({ SUBDATA_RATE_LIMIT_QUOTA: "5", SUBDATA_RATE_LIMIT_WINDOW_SECONDS: "60" });
    await h.cacheLive();
    merchantId = await h.fixtures.merchant();
    await h.fixtures.subscription({ merchantId });
  });

  afterAll(async () => {
    await h?.close();
  });

  const codeOf = (body: string) => (JSON.parse(body) as { code: string }).code;

  it("missing, malformed, mistyped (bad checksum) and unknown keys: 401 with the documented code", async () => {
    const { key } = await h.createKey(merchantId);
    const cases: Array<[string | undefined, string]> = [
      [undefined, "missing_api_key"],
      ["", "missing_api_key"],
      ["sds_short", "invalid_api_key"],
      [`${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`, "invalid_api_key"],
      [`sk_live_${key.slice(4)}`, "invalid_api_key"],
    ];
    for (const [candidate, code] of cases) {
      const response = await h.request(candidate || undefined, "/subscriptions");
      expect(response.statusCode, String(candidate)).toBe(401);
      expect(codeOf(response.body), String(candidate)).toBe(code);
      expect(response.headers["www-authenticate"]).toMatch(/^Bearer/);
      expect(response.body).not.toContain(key);
    }
  });

  it("an expired key: 401 expired_api_key", async () => {
    const created = await h.auth.apiKeys.createApiKey({ merchantId, name: "expiring" });
    await h.admin.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [created.apiKey!.id]);
    const response = await h.request(created.key, "/subscriptions");
    expect(response.statusCode).toBe(401);
    expect(codeOf(response.body)).toBe("expired_api_key");
  });

  it("a revoked key stops working, even when the gateway had it cached", async () => {
    const { key, apiKeyId } = await h.createKey(merchantId);
    expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
    await h.auth.apiKeys.revokeApiKey({ merchantId, apiKeyId });
    await pollUntil(async () => (await h.request(key, "/subscriptions")).statusCode === 401, "the revocation to reach the gateway");
    const response = await h.request(key, "/subscriptions");
    expect(codeOf(response.body)).toBe("revoked_api_key");
  });

  it("secrets are compared in constant time (service credential, page tokens, key hashes)", () => {
    for (const file of ["services/runtime/src/service-credential.ts", "services/runtime/src/page-token.ts", "services/auth/src/api-key-service.ts"]) {
      expect(readFileSync(new URL(`../../${file}`, import.meta.url), "utf8"), file).toContain("timingSafeEqual(");
    }
  });

  it("per-key rate limit: 429 rate_limited with Retry-After and RateLimit fields, other keys unaffected", async () => {
    const { key } = await h.createKey(merchantId);
    const statuses: number[] = [];
    let limited;
    for (let index = 0; index < 8; index++) {
      const response = await h.request(key, "/subscriptions?limit=1");
      statuses.push(response.statusCode);
      if (response.statusCode === 429) limited = response;
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(limited).toBeDefined();
    expect(codeOf(limited!.body)).toBe("rate_limited");
    expect(Number(limited!.headers["retry-after"])).toBeGreaterThan(0);
    expect(limited!.headers["ratelimit-policy"]).toBeTruthy();
    expect(limited!.headers.ratelimit).toBeTruthy();
    const other = await h.createKey(merchantId);
    expect((await h.request(other.key, "/subscriptions?limit=1")).statusCode).toBe(200);
  });

  it("page caps: limit above 200 is refused; a body is never read", async () => {
    const { key } = await h.createKey(merchantId);
    const response = await h.request(key, "/subscriptions?limit=201");
    expect(response.statusCode).toBe(400);
    const body = await h.gateway.inject({
      method: "POST",
      url: "/api/v1/subscriptions",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      payload: "x".repeat(1024 * 1024),
    });
    expect(body.statusCode).toBeGreaterThanOrEqual(400);
    expect(body.statusCode).toBeLessThan(500);
  });

  it("RPC page_size is refused or capped by the services, whatever is asked", async () => {
    const many = await h.fixtures.merchant();
    await h.admin.query(
      `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
       SELECT $1, c.id, p.id, 'ACTIVE', 100, 'USD', now(), now() + interval '1 month'
         FROM (SELECT $2::text AS id) c, (SELECT $3::text AS id) p, generate_series(1, 205)`,
      [many, await h.fixtures.customer(many), await h.fixtures.plan(many, { currency: "USD", priceMinor: 100 })],
    );
    // Refused or capped; never a million rows.
    for (const pageSize of [1_000_000, 201, 2_147_483_647]) {
      try {
        const page = await h.query.subscriptions.listSubscriptions({ merchantId: many, pageSize });
        expect(page.subscriptions.length).toBeLessThanOrEqual(200);
      } catch (error) {
        expect(ConnectError.from(error).code).toBe(Code.InvalidArgument);
      }
    }
    const page = await h.query.subscriptions.listSubscriptions({ merchantId: many, pageSize: 200 });
    expect(page.subscriptions).toHaveLength(200);
    expect(page.nextPageToken).not.toBe("");
  });
});

describe("internal RPCs refuse callers without the service credential", () => {
  let h: GatewayHarness;
  let webhook: RunningWebhookServer;

  beforeAll(async () => {
    h = await startGatewayHarness();
    webhook = await startWebhookServer();
  });

  afterAll(async () => {
    await webhook?.stop();
    await h?.close();
  });

  async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
    try {
      await call;
      return "ok";
    } catch (error) {
      return ConnectError.from(error).code;
    }
  }

  it.each(["none", "wrong"] as const)("query, auth and webhook answer UNAUTHENTICATED with %s credential", async (kind) => {
    const transports = [h.query.baseUrl, h.auth.baseUrl, webhook.baseUrl].map((baseUrl) =>
      kind === "none"
        ? { transport: createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }), close: () => {} }
        : createServiceTransport({ baseUrl, serviceToken: "x".repeat(48) }),
    );
    try {
      const [query, auth, hooks] = transports;
      expect(await codeOf(createClient(SubscriptionService, query!.transport).listSubscriptions({ merchantId: "mer_x", pageSize: 1 }))).toBe(
        Code.Unauthenticated,
      );
      expect(await codeOf(createClient(ApiKeyService, auth!.transport).createApiKey({ merchantId: "mer_x", name: "x" }))).toBe(Code.Unauthenticated);
      expect(await codeOf(createClient(ApiKeyService, auth!.transport).authenticateApiKey({ key: "sds_x" }))).toBe(Code.Unauthenticated);
      expect(await codeOf(createClient(WebhookEndpointService, hooks!.transport).listEndpoints({ merchantId: "mer_x", pageSize: 1 }))).toBe(
        Code.Unauthenticated,
      );
    } finally {
      for (const transport of transports) transport.close();
    }
  });
});
