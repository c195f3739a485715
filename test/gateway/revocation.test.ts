import { create, toBinary } from "@bufbuild/protobuf";
import { connect } from "@nats-io/transport-node";
import { apiKeyRevokedSubject } from "@subdata/events";
import { createApiKeyCache, createRevocationListener } from "@subdata/gateway";
import { ApiKeyRevokedEventSchema } from "@subdata/proto/subdata/events/v1/api_key_event_pb";
import { createLogger } from "@subdata/runtime";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayHarness, pollUntil, startGatewayHarness } from "./gateway-harness.ts";

describe("revocation through the gateway", () => {
  let h: GatewayHarness;
  let merchantId = "";
  const keyLookups = () => h.auth.statements.filter((sql) => /FROM api_keys/i.test(sql) && /key_hash/i.test(sql)).length;

  beforeAll(async () => {
    h = await startGatewayHarness();
    merchantId = await h.fixtures.merchant();
    await h.cacheLive();
  });

  afterAll(async () => {
    await h?.close();
  });

  it("serves a verified key from the cache, without asking the auth service again", async () => {
    const { key } = await h.createKey(merchantId);
    expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
    const lookups = keyLookups();
    expect(lookups).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
    expect(keyLookups()).toBe(lookups);
  });

  it("refuses a revoked key within 1 s although it was cached (RevokeApiKey → NATS → eviction)", async () => {
    const { key, apiKeyId } = await h.createKey(merchantId);
    expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
    expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
    await h.auth.apiKeys.revokeApiKey({ merchantId, apiKeyId });
    // The contract's bound: every gateway stops accepting the key within one second.
    await pollUntil(async () => (await h.request(key, "/subscriptions")).statusCode === 401, "the revoked key to be refused", 1_000);
    const refused = await h.request(key, "/subscriptions");
    expect(refused.json().code).toBe("revoked_api_key");
    expect(refused.headers["www-authenticate"]).toContain('error="invalid_token"');
  });

  it("evicts on a raw ApiKeyRevokedEvent published on core NATS", async () => {
    const { key, apiKeyId } = await h.createKey(merchantId);
    await h.request(key, "/subscriptions");
    const lookups = keyLookups();
    const nc = await connect({ servers: inject("natsUrl") });
    try {
      nc.publish(apiKeyRevokedSubject, toBinary(ApiKeyRevokedEventSchema, create(ApiKeyRevokedEventSchema, { apiKeyId, merchantId })));
      await nc.flush();
    } finally {
      await nc.close();
    }
    // The key is not really revoked, so it is verified again upstream (and cached again).
    await pollUntil(
      async () => {
        await h.request(key, "/subscriptions");
        return keyLookups() > lookups;
      },
      "the event to evict the key",
      1_000,
    );
  });

  it("trusts no cache while its NATS subscription is not connected", async () => {
    const cache = createApiKeyCache({ ttlMs: 60_000, maxEntries: 10, now: Date.now });
    const listener = createRevocationListener({
      natsUrl: "nats://127.0.0.1:1",
      cache,
      logger: createLogger({ name: "gateway", level: "silent" }),
      retryDelayMs: 50,
    });
    listener.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(cache.trusted).toBe(false);
      cache.set("digest", { apiKeyId: "key_x", merchantId, expiresAtMs: null }, cache.epoch());
      expect(cache.get("digest")).toBeUndefined();
    } finally {
      await listener.close();
    }
    const live = createRevocationListener({ natsUrl: inject("natsUrl"), cache, logger: createLogger({ name: "gateway", level: "silent" }) });
    live.start();
    try {
      await pollUntil(() => cache.trusted, "the subscription to go live");
    } finally {
      await live.close();
    }
    expect(cache.trusted).toBe(false);
  });
});
