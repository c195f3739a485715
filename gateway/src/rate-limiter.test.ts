import { describe, expect, it } from "vitest";
import { createRateLimiter, rateLimitField } from "./rate-limiter.ts";

describe("the per-key token bucket", () => {
  function limiter(quota = 3, windowSeconds = 1) {
    let now = 1_000_000;
    const rateLimiter = createRateLimiter({ quota, windowSeconds, now: () => now });
    return { rateLimiter, advance: (ms: number) => void (now += ms) };
  }

  it("allows a burst of the quota, then refuses with the seconds until a token is back", () => {
    const { rateLimiter } = limiter(3, 1);
    expect([1, 2, 3].map(() => rateLimiter.take("key_a").remaining)).toEqual([2, 1, 0]);
    const refused = rateLimiter.take("key_a");
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, resetSeconds: 1 });
    expect(rateLimitField(refused)).toBe('"default";r=0;t=1');
    expect(rateLimiter.policy).toBe('"default";q=3;w=1');
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
