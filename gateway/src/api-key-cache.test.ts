import { describe, expect, it } from "vitest";
import { createApiKeyCache, digestOfKey } from "./api-key-cache.ts";

describe("the verified-key cache", () => {
  function cache(options: { ttlMs?: number; maxEntries?: number } = {}) {
    let now = 1_000_000;
    const apiKeyCache = createApiKeyCache({ ttlMs: options.ttlMs ?? 60_000, maxEntries: options.maxEntries ?? 10, now: () => now });
    apiKeyCache.setTrusted(true);
    return {
      apiKeyCache,
      advance: (ms: number) => {
        now += ms;
      },
      now: () => now,
    };
  }
  const key = (id: string, expiresAtMs: number | null = null) => ({ apiKeyId: id, merchantId: "mer_a", expiresAtMs });

  it("keys entries by the SHA-256 of the key, never the key", () => {
    expect(digestOfKey("sds_abc")).toMatch(/^[0-9a-f]{64}$/);
    expect(digestOfKey("sds_abc")).not.toContain("sds_abc");
  });

  it("expires entries after the TTL, or at the key's own expiry if sooner", () => {
    const { apiKeyCache, advance, now } = cache({ ttlMs: 60_000 });
    apiKeyCache.set("a", key("key_a"), apiKeyCache.epoch());
    apiKeyCache.set("b", key("key_b", now() + 1_000), apiKeyCache.epoch());
    advance(1_000);
    expect(apiKeyCache.get("a")).toBeDefined();
    expect(apiKeyCache.get("b")).toBeUndefined();
    advance(59_000);
    expect(apiKeyCache.get("a")).toBeUndefined();
  });

  it("evicts by api key id", () => {
    const { apiKeyCache } = cache();
    apiKeyCache.set("a", key("key_a"), apiKeyCache.epoch());
    apiKeyCache.evict("key_a");
    expect(apiKeyCache.get("a")).toBeUndefined();
  });

  it("does not cache an answer that was in flight while a revocation arrived", () => {
    const { apiKeyCache } = cache();
    const epoch = apiKeyCache.epoch();
    apiKeyCache.evict("key_a");
    apiKeyCache.set("a", key("key_a"), epoch);
    expect(apiKeyCache.get("a")).toBeUndefined();
  });

  it("is bounded, dropping the least recently used", () => {
    const { apiKeyCache } = cache({ maxEntries: 2 });
    apiKeyCache.set("a", key("key_a"), apiKeyCache.epoch());
    apiKeyCache.set("b", key("key_b"), apiKeyCache.epoch());
    apiKeyCache.get("a");
    apiKeyCache.set("c", key("key_c"), apiKeyCache.epoch());
    expect(apiKeyCache.size).toBe(2);
    expect(apiKeyCache.get("b")).toBeUndefined();
    expect(apiKeyCache.get("a")).toBeDefined();
  });

  it("serves and keeps nothing while untrusted, and forgets everything when trust is lost", () => {
    const { apiKeyCache } = cache();
    apiKeyCache.set("a", key("key_a"), apiKeyCache.epoch());
    apiKeyCache.setTrusted(false);
    expect(apiKeyCache.get("a")).toBeUndefined();
    apiKeyCache.set("b", key("key_b"), apiKeyCache.epoch());
    apiKeyCache.setTrusted(true);
    expect(apiKeyCache.get("a")).toBeUndefined();
    expect(apiKeyCache.get("b")).toBeUndefined();
    expect(apiKeyCache.size).toBe(0);
  });
});
