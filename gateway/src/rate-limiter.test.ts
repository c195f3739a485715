import { describe, expect, it } from "vitest";
import { createRateLimiter, rateLimitField } from "./rate-limiter.ts";

describe("the per-key token bucket", () => {
  function limiter(quota = 3, windowSeconds = 1) {
    let now = 1_000_000;
    const rateLimiter = createRateLimiter({ quota, windowSeconds, now: () => now });
    return {
      rateLimiter,
      advance: (ms: number) => {
        now += ms;
      },
    };
  }

  it("allows a burst of the quota, then refuses with the seconds until a token is back", () => {
    const { rateLimiter } = limiter(3, 1);
    expect([1, 2, 3].map(() => rateLimiter.take("key_a").remaining)).toEqual([2, 1, 0]);
    const refused = rateLimiter.take("key_a");
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, resetSeconds: 1 });
    expect(rateLimitField(refused)).toBe('"default";r=0;t=1');
    expect(rateLimiter.policy).toBe('"default";q=3;w=1');
  });

  it("keeps at most maxBuckets buckets: a bucket pushed out by other keys comes back full", () => {
    const rateLimiter = createRateLimiter({ quota: 1, windowSeconds: 3_600, now: () => 0, maxBuckets: 4 });
    expect(rateLimiter.take("key_a").allowed).toBe(true);
    expect(rateLimiter.take("key_a").allowed).toBe(false);
    // Four other keys fill the bound; key_a's empty bucket is forgotten, not kept beside them.
    for (const key of ["key_b", "key_c", "key_d", "key_e"]) rateLimiter.take(key);
    expect(rateLimiter.take("key_a").allowed).toBe(true);
  });

  it("keeps each key's bucket apart", () => {
    const { rateLimiter } = limiter(1, 1);
    expect(rateLimiter.take("key_a").allowed).toBe(true);
    expect(rateLimiter.take("key_b").allowed).toBe(true);
    expect(rateLimiter.take("key_a").allowed).toBe(false);
  });

  it("refills continuously, never above the quota", () => {
    const { rateLimiter, advance } = limiter(10, 10);
    for (let i = 0; i < 10; i++) rateLimiter.take("key_a");
    expect(rateLimiter.take("key_a")).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    advance(2_500);
    expect(rateLimiter.take("key_a")).toMatchObject({ allowed: true, remaining: 1 });
    advance(60_000);
    expect(rateLimiter.take("key_a")).toMatchObject({ allowed: true, remaining: 9, resetSeconds: 1 });
  });

  it("announces a long Retry-After for slow windows", () => {
    const { rateLimiter } = limiter(1, 60);
    rateLimiter.take("key_a");
    expect(rateLimiter.take("key_a")).toMatchObject({ allowed: false, retryAfterSeconds: 60, resetSeconds: 60 });
  });
});

describe("refunds and named policies", () => {
  it("gives a token back, never above the quota", () => {
    let now = 0;
    const rateLimiter = createRateLimiter({ quota: 2, windowSeconds: 60, now: () => now });
    rateLimiter.take("client");
    rateLimiter.take("client");
    expect(rateLimiter.take("client").allowed).toBe(false);
    rateLimiter.refund("client");
    expect(rateLimiter.take("client")).toMatchObject({ allowed: true, remaining: 0 });
    now += 120_000;
    rateLimiter.refund("client");
    expect(rateLimiter.take("client").remaining).toBe(1);
  });

  it("names its policy in both fields", () => {
    const rateLimiter = createRateLimiter({ quota: 5, windowSeconds: 60, now: () => 0, policyName: "auth_failures" });
    expect(rateLimiter.policy).toBe('"auth_failures";q=5;w=60');
    expect(rateLimiter.field(rateLimiter.take("client"))).toBe('"auth_failures";r=4;t=12');
  });
});
