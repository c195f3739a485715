import { SubdataConnectionError } from "./errors.ts";

/**
 * The one place that decides when to send a request again and how long to wait first:
 * - 429 and 503 wait the Retry-After the server sent (seconds), or back off when it sent none;
 * - other 5xx and network errors back off exponentially with jitter, bounded;
 * - a `RateLimit: "…";r=0;t=N` field on any response holds the next request back N seconds, so a
 *   client that keeps to the announced quota never sees a 429 in the first place;
 * - everything else (2xx, 3xx, 4xx but 429) goes back to the caller as it is.
 */

export type FetchFunction = (request: Request) => Promise<Response>;

export interface Timers {
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Epoch milliseconds. */
  now(): number;
  /** Uniform in [0, 1): the jitter. */
  random(): number;
}

export const systemTimers: Timers = {
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
  now: () => Date.now(),
  random: () => Math.random(),
};

export interface RetryPolicy {
  /** Retries after the first attempt; Infinity retries until the signal aborts. */
  maxRetries: number;
  /** First back-off step (ms); doubles per attempt up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After above this is cut to it (a server asking for an hour still gets a retry). */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  baseDelayMs: 250,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 300_000,
};

/** Exponential back-off with "equal jitter": half the step is certain, half random, never above the bound. */
export function backoffDelayMs(attempt: number, policy: RetryPolicy, random: () => number): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return step / 2 + (random() * step) / 2;
}

/** Retry-After in its delta-seconds form (the gateway's) or as an HTTP date; undefined when absent or bad. */
export function parseRetryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The IETF RateLimit field (draft-ietf-httpapi-ratelimit-headers): a list of `"policy";r=N;t=S` items.
 * Returns how long to hold the next request back: the largest `t` of an exhausted (`r=0`) policy, in ms,
 * or 0 when some quota is left.
 */
export function rateLimitPauseMs(value: string | null): number {
  if (value === null) return 0;
  let pause = 0;
  for (const item of value.split(",")) {
    const parameters = new Map<string, string>();
    for (const part of item.split(";").slice(1)) {
      const [key, raw] = part.split("=", 2);
      if (key !== undefined && raw !== undefined) parameters.set(key.trim(), raw.trim());
    }
    const remaining = parameters.get("r");
    const reset = parameters.get("t");
    if (remaining !== undefined && /^\d+$/.test(remaining) && Number(remaining) === 0 && reset !== undefined && /^\d+$/.test(reset)) {
      pause = Math.max(pause, Number(reset) * 1000);
    }
  }
  return pause;
}

const isRetryableStatus = (status: number) => status === 429 || status >= 500;

/** A fetch with the per-request settings the client varies (the feed's long polls need more of both). */
export type RetryingFetch = (request: Request, settings?: { maxRetries?: number; timeoutMs?: number }) => Promise<Response>;

class AttemptTimeout extends Error {
  constructor(ms: number) {
    super(`no response within ${ms} ms`);
    this.name = "AttemptTimeout";
  }
}

/**
 * A fetch that retries by the policy and paces itself by the RateLimit field. Requests must be
 * replayable (the API is GET only). Shared by all requests of one client, so the pause one response
 * announces holds back every request that follows. Each attempt gets `timeoutMs` until the response
 * headers arrive; a timed-out attempt counts as a network error.
 */
export function createRetryingFetch(options: { fetch: FetchFunction; policy: RetryPolicy; timers: Timers; timeoutMs: number }): RetryingFetch {
  const { policy, timers } = options;
  let notBefore = 0;

  const holdUntil = (at: number) => {
    notBefore = Math.max(notBefore, at);
  };

  return async function retryingFetch(request, settings = {}) {
    const maxRetries = settings.maxRetries ?? policy.maxRetries;
    const timeoutMs = settings.timeoutMs ?? options.timeoutMs;
    const signal = request.signal;
    for (let attempt = 0; ; attempt++) {
      const wait = notBefore - timers.now();
      if (wait > 0) await timers.sleep(wait, signal);
      const attemptAbort = new AbortController();
      const timer = setTimeout(() => attemptAbort.abort(new AttemptTimeout(timeoutMs)), timeoutMs);
      let response: Response;
      try {
        response = await options.fetch(new Request(request, { signal: AbortSignal.any([signal, attemptAbort.signal]) }));
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (attempt >= maxRetries) throw new SubdataConnectionError(request.url, { cause: attemptAbort.signal.aborted ? attemptAbort.signal.reason : error });
        await timers.sleep(backoffDelayMs(attempt, policy, timers.random), signal);
        continue;
      } finally {
        clearTimeout(timer);
      }
      const pause = rateLimitPauseMs(response.headers.get("ratelimit"));
      if (pause > 0) holdUntil(timers.now() + pause);
      if (!isRetryableStatus(response.status) || attempt >= maxRetries) return response;

      // Free the connection before waiting; the body of a response we retry is never read.
      await response.body?.cancel().catch(() => {});
      const retryAfter = response.status === 429 || response.status === 503 ? parseRetryAfterMs(response.headers.get("retry-after"), timers.now()) : undefined;
      if (retryAfter !== undefined) {
        holdUntil(timers.now() + Math.min(retryAfter, policy.maxRetryAfterMs));
      } else {
        await timers.sleep(backoffDelayMs(attempt, policy, timers.random), signal);
      }
    }
  };
}
