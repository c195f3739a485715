import { describe, expect, it } from "vitest";
import { createSubdataClient } from "./client.ts";
import { SubdataConnectionError } from "./errors.ts";
import { backoffDelayMs, DEFAULT_RETRY_POLICY, parseRetryAfterMs, rateLimitPauseMs, systemTimers } from "./retry.ts";

describe("reading the pacing headers", () => {
  it("reads Retry-After as seconds or as an HTTP date, and ignores junk", () => {
    expect(parseRetryAfterMs("3", 0)).toBe(3000);
    expect(parseRetryAfterMs(" 0 ", 0)).toBe(0);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfterMs("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfterMs("soon", now)).toBeUndefined();
    expect(parseRetryAfterMs(null, now)).toBeUndefined();
  });

  it("pauses for t seconds only when a RateLimit policy has nothing left", () => {
    expect(rateLimitPauseMs('"default";r=0;t=2')).toBe(2000);
    expect(rateLimitPauseMs('"default";r=1;t=2')).toBe(0);
    expect(rateLimitPauseMs('"default";r=5;t=1, "auth_failures";r=0;t=60')).toBe(60_000);
    expect(rateLimitPauseMs("garbage")).toBe(0);
    expect(rateLimitPauseMs(null)).toBe(0);
  });

  it("backs off between half and all of a doubling step, capped", () => {
    expect(backoffDelayMs(0, DEFAULT_RETRY_POLICY, () => 0)).toBe(125);
    expect(backoffDelayMs(0, DEFAULT_RETRY_POLICY, () => 0.999_999)).toBeCloseTo(250);
    expect(backoffDelayMs(3, DEFAULT_RETRY_POLICY, () => 0)).toBe(1000);
    expect(backoffDelayMs(30, DEFAULT_RETRY_POLICY, () => 0.999_999)).toBeLessThanOrEqual(DEFAULT_RETRY_POLICY.maxDelayMs);
  });
});

describe("a request that never answers", () => {
  it("times out, is retried, and ends as a connection error", async () => {
    let attempts = 0;
    const client = createSubdataClient({
      baseUrl: "http://api.test",
      apiKey: "sds_key",
      maxRetries: 1,
      timeoutMs: 5,
      timers: { ...systemTimers, sleep: async () => {} },
      fetch: (request) => {
        attempts++;
        return new Promise((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true }));
      },
    });
    const error = await client.listOrders().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SubdataConnectionError);
    expect((error as Error).message).toMatch(/no response within 5 ms/);
    expect(attempts).toBe(2);
  });
});
