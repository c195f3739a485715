import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_SCHEDULE, nextAttempt, parseDuration, parseRetryAfter, parseRetrySchedule, RETRY_AFTER_MAX_MS, withJitter } from "./retry-schedule.ts";

describe("parseRetrySchedule", () => {
  it("reads the default: immediately, 5 s, 5 m, 30 m, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h", () => {
    const h = 3_600_000;
    expect(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE)).toEqual([0, 5_000, 300_000, 1_800_000, 2 * h, 5 * h, 10 * h, 14 * h, 20 * h, 24 * h]);
  });

  it("accepts milliseconds, days and spaces", () => {
    expect(parseRetrySchedule("0s, 100ms,1.5s ,2d")).toEqual([0, 100, 1_500, 172_800_000]);
  });

  it.each(["", "5s,,5m", "5", "5 minutes", "-5s", "5s,abc", "40d"])("rejects %j", (text) => {
    expect(() => parseRetrySchedule(text)).toThrow();
  });

  it("parses durations", () => {
    expect(parseDuration("5d")).toBe(432_000_000);
    expect(parseDuration("250ms")).toBe(250);
  });
});

describe("withJitter", () => {
  it("stays within ±20 %", () => {
    expect(withJitter(10_000, () => 0)).toBe(8_000);
    expect(withJitter(10_000, () => 0.999999)).toBeLessThanOrEqual(12_000);
    expect(withJitter(10_000, () => 0.5)).toBe(10_000);
    for (let i = 0; i < 1_000; i++) {
      const value = withJitter(10_000);
      expect(value).toBeGreaterThanOrEqual(8_000);
      expect(value).toBeLessThanOrEqual(12_000);
    }
  });

  it("keeps an immediate attempt immediate", () => {
    expect(withJitter(0)).toBe(0);
  });
});

describe("nextAttempt", () => {
  const schedule = [0, 5_000, 300_000];
  const mid = () => 0.5;

  it("uses the delay before the next attempt", () => {
    expect(nextAttempt({ schedule, attemptsMade: 1, random: mid })).toEqual({ kind: "retry", delayMs: 5_000 });
    expect(nextAttempt({ schedule, attemptsMade: 2, random: mid })).toEqual({ kind: "retry", delayMs: 300_000 });
  });

  it("is exhausted after the last attempt, whatever Retry-After says", () => {
    expect(nextAttempt({ schedule, attemptsMade: 3, retryAfterMs: 1_000 })).toEqual({ kind: "exhausted" });
  });

  it("honours a later Retry-After", () => {
    expect(nextAttempt({ schedule, attemptsMade: 1, retryAfterMs: 60_000, random: mid })).toEqual({ kind: "retry", delayMs: 60_000 });
  });

  it("never retries sooner than the schedule because of Retry-After", () => {
    expect(nextAttempt({ schedule, attemptsMade: 2, retryAfterMs: 1_000, random: mid })).toEqual({ kind: "retry", delayMs: 300_000 });
  });

  it("caps Retry-After at 24 h", () => {
    expect(nextAttempt({ schedule, attemptsMade: 1, retryAfterMs: 10 * RETRY_AFTER_MAX_MS, random: mid })).toEqual({
      kind: "retry",
      delayMs: RETRY_AFTER_MAX_MS,
    });
  });
});

describe("parseRetryAfter", () => {
  const now = new Date("2026-11-22T10:00:00Z");

  it("reads delay-seconds", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  it("reads an HTTP date relative to now", () => {
    expect(parseRetryAfter("Sun, 22 Nov 2026 10:05:00 GMT", now)).toBe(300_000);
  });

  it("treats a past date as now", () => {
    expect(parseRetryAfter("Sun, 22 Nov 2026 09:00:00 GMT", now)).toBe(0);
  });

  it.each([undefined, "", "soon", "-5", "1.5", "12abc"])("ignores %j", (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});
