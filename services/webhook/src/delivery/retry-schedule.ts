/**
 * When to try a webhook delivery again. The schedule lists the delay before each attempt (attempt 1
 * first, usually "0s": immediately); after the last attempt fails the delivery is FAILED. Delays get
 * ±20 % jitter so endpoints that failed together do not retry in lock-step.
 */

export const DEFAULT_RETRY_SCHEDULE = "0s,5s,5m,30m,2h,5h,10h,14h,20h,24h";

/** A receiver's Retry-After never pushes an attempt further out than this. */
export const RETRY_AFTER_MAX_MS = 24 * 60 * 60 * 1000;

const JITTER_RATIO = 0.2;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "250ms", "5s", "5m", "2h", "5d" → milliseconds. Throws with a message fit for a config error. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a duration (use a number with ms, s, m, h or d, e.g. 5m)`);
  const value = Number(match[1]) * UNIT_MS[match[2]!]!;
  if (!Number.isFinite(value) || value > 30 * UNIT_MS.d!) throw new Error(`"${text}" is longer than 30 days`);
  return Math.round(value);
}

/** "0s,5s,5m" → [0, 5000, 300000]: the delay before attempt 1, 2, 3, … */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(",").map((part) => part.trim());
  if (parts.length === 0 || parts.some((part) => part === "")) {
    throw new Error("must be a comma-separated list of durations, e.g. 0s,5s,5m");
  }
  if (parts.length > 50) throw new Error("must list at most 50 attempts");
  return parts.map(parseDuration);
}

/** `delayMs` ± 20 %; `random` returns [0, 1) like Math.random (injected in tests). */
export function withJitter(delayMs: number, random: () => number = Math.random): number {
  return Math.round(delayMs * (1 + (random() * 2 - 1) * JITTER_RATIO));
}

export type NextAttempt = { kind: "retry"; delayMs: number } | { kind: "exhausted" };

export interface NextAttemptInput {
  schedule: readonly number[];
  /** Attempts made so far, the failed one included. */
  attemptsMade: number;
  /** The receiver's Retry-After in milliseconds from now, when it sent a usable one on a 429/5xx. */
  retryAfterMs?: number | undefined;
  random?: () => number;
}

/**
 * The delay before the next attempt, or "exhausted" after the schedule's last attempt. A Retry-After
 * is honoured within bounds: never sooner than the schedule would retry, never later than 24 h.
 */
export function nextAttempt(input: NextAttemptInput): NextAttempt {
  const scheduled = input.schedule[input.attemptsMade];
  if (scheduled === undefined) return { kind: "exhausted" };
  const delayMs = withJitter(scheduled, input.random);
  if (input.retryAfterMs === undefined) return { kind: "retry", delayMs };
  return { kind: "retry", delayMs: Math.max(delayMs, Math.min(input.retryAfterMs, RETRY_AFTER_MAX_MS)) };
}

/**
 * A Retry-After header value → milliseconds from `now`: delay-seconds ("120") or an HTTP date
 * ("Wed, 21 Oct 2026 07:28:00 GMT"). Unusable values give undefined; dates in the past give 0.
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
