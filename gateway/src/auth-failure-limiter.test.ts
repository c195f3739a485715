import { describe, expect, it } from "vitest";
import { clientKeyOf, createAuthFailureLimiter } from "./auth-failure-limiter.ts";

describe("the per-address failed-authentication limiter", () => {
  function limiter(options: { quota?: number; windowSeconds?: number; maxClients?: number; maxKnownKeys?: number } = {}) {
    let now = 1_000_000;
    const failures = createAuthFailureLimiter({
      quota: options.quota ?? 3,
      windowSeconds: options.windowSeconds ?? 60,
      maxClients: options.maxClients ?? 100,
      maxKnownKeys: options.maxKnownKeys,
      now: () => now,
    });
    /** One attempt that the auth service refuses; returns whether it was let through. */
    const fail = (ip: string, digest: string | null = "bad") => {
      const attempt = failures.attempt(ip, digest);
      if (attempt.allowed) attempt.settle("refused");
      return attempt.allowed;
    };
    return {
      failures,
      fail,
      advance: (ms: number) => {
        now += ms;
      },
    };
  }

  it("lets the quota of failures through, then refuses with the seconds until one more is allowed", () => {
    const { failures, fail } = limiter({ quota: 3, windowSeconds: 60 });
    expect([fail("203.0.113.9"), fail("203.0.113.9"), fail("203.0.113.9")]).toEqual([true, true, true]);
    const refused = failures.attempt("203.0.113.9", "bad");
    expect(refused.allowed).toBe(false);
    expect(refused.decision).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 20, resetSeconds: 60 });
    expect(failures.policy).toBe('"auth_failures";q=3;w=60');
    expect(failures.field(refused.decision!)).toBe('"auth_failures";r=0;t=60');
  });

  it("keeps addresses apart", () => {
    const { fail } = limiter({ quota: 1 });
    expect(fail("203.0.113.9")).toBe(true);
    expect(fail("198.51.100.7")).toBe(true);
    expect(fail("203.0.113.9")).toBe(false);
    expect(fail("198.51.100.7")).toBe(false);
  });

  it("refills over the window", () => {
    const { fail, advance } = limiter({ quota: 3, windowSeconds: 60 });
    for (let i = 0; i < 3; i++) fail("203.0.113.9");
    expect(fail("203.0.113.9")).toBe(false);
    advance(19_999);
    expect(fail("203.0.113.9")).toBe(false);
    advance(1);
    expect(fail("203.0.113.9")).toBe(true);
    expect(fail("203.0.113.9")).toBe(false);
  });

  it("does not count successes, nor attempts the auth service never answered", () => {
    const { failures, fail } = limiter({ quota: 2 });
    for (let i = 0; i < 10; i++) {
      const good = failures.attempt("203.0.113.9", `good_${i}`);
      expect(good.allowed).toBe(true);
      good.settle("authenticated");
      const unanswered = failures.attempt("203.0.113.9", "bad");
      expect(unanswered.allowed).toBe(true);
      unanswered.settle("unanswered");
    }
    expect([fail("203.0.113.9"), fail("203.0.113.9"), fail("203.0.113.9")]).toEqual([true, true, false]);
  });

  it("reserves before the answer: concurrent attempts beyond the quota are refused while the first are in flight", () => {
    const { failures } = limiter({ quota: 3 });
    const inFlight = [1, 2, 3].map(() => failures.attempt("203.0.113.9", "bad"));
    expect(inFlight.map((attempt) => attempt.allowed)).toEqual([true, true, true]);
    expect(failures.attempt("203.0.113.9", "bad").allowed).toBe(false);
    inFlight[0]!.settle("authenticated");
    expect(failures.attempt("203.0.113.9", "bad").allowed).toBe(true);
  });

  it("settling twice, or settling a refused attempt, changes nothing", () => {
    const { failures, fail } = limiter({ quota: 1 });
    const attempt = failures.attempt("203.0.113.9", "bad");
    attempt.settle("unanswered");
    attempt.settle("unanswered");
    expect(fail("203.0.113.9")).toBe(true);
    const refused = failures.attempt("203.0.113.9", "bad");
    expect(refused.allowed).toBe(false);
    refused.settle("unanswered");
    expect(fail("203.0.113.9")).toBe(false);
  });

  it("lets a key that authenticated before through a throttled address, until it is refused", () => {
    const { failures, fail } = limiter({ quota: 1 });
    failures.attempt("203.0.113.9", "known").settle("authenticated");
    expect(fail("203.0.113.9")).toBe(true);
    expect(fail("203.0.113.9")).toBe(false);
    const known = failures.attempt("203.0.113.9", "known");
    expect(known).toMatchObject({ allowed: true, decision: null });
    known.settle("authenticated");
    expect(failures.attempt("203.0.113.9", "known").allowed).toBe(true);
    // Revoked since: refused once, then it is a stranger again.
    failures.attempt("203.0.113.9", "known").settle("refused");
    expect(failures.attempt("203.0.113.9", "known").allowed).toBe(false);
    expect(failures.attempt("203.0.113.9", "never_seen").allowed).toBe(false);
  });

  it("remembers a bounded number of keys, least recently used forgotten first", () => {
    const { failures, fail } = limiter({ quota: 1, maxKnownKeys: 2 });
    for (const digest of ["a", "b", "c"]) failures.attempt("198.51.100.7", digest).settle("authenticated");
    expect(fail("203.0.113.9")).toBe(true);
    expect(failures.attempt("203.0.113.9", "a").allowed).toBe(false);
    expect(failures.attempt("203.0.113.9", "b").allowed).toBe(true);
    expect(failures.attempt("203.0.113.9", "c").allowed).toBe(true);
  });

  it("tracks a bounded number of addresses: the least recently seen is forgotten, as a full bucket", () => {
    const { fail } = limiter({ quota: 1, maxClients: 2 });
    expect(fail("192.0.2.1")).toBe(true);
    expect(fail("192.0.2.2")).toBe(true);
    expect(fail("192.0.2.3")).toBe(true);
    // 192.0.2.1 was dropped to make room; 192.0.2.3 is still empty.
    expect(fail("192.0.2.3")).toBe(false);
    expect(fail("192.0.2.1")).toBe(true);
  });

  it("counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one", () => {
    const { fail } = limiter({ quota: 1 });
    expect(fail("2001:db8:1:2::1")).toBe(true);
    expect(fail("2001:db8:1:2:ffff:eeee:dddd:cccc")).toBe(false);
    expect(fail("2001:db8:1:3::1")).toBe(true);
    expect(fail("::ffff:192.0.2.1")).toBe(true);
    expect(fail("192.0.2.1")).toBe(false);
  });
});

describe("clientKeyOf", () => {
  it.each([
    ["192.0.2.1", "192.0.2.1"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::FFFF:192.0.2.1", "192.0.2.1"],
    ["2001:0db8:0001:0002:0003:0004:0005:0006", "2001:db8:1:2::/64"],
    ["2001:db8::", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
    ["not an address", "not an address"],
    ["x".repeat(500), "x".repeat(64)],
  ])("%s counts as %s", (ip, key) => {
    expect(clientKeyOf(ip)).toBe(key);
  });
});
