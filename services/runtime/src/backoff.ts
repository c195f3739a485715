/** Exponential backoff with full jitter, so several processes recovering together do not retry in step. */
export interface Backoff {
  /** The delay before the next retry; grows with each call until reset(). */
  next(): number;
  reset(): void;
}

export function createBackoff(options: { initialMs: number; maxMs: number; random?: () => number }): Backoff {
  const random = options.random ?? Math.random;
  let failures = 0;
  return {
    next() {
      const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(failures, 30));
      failures += 1;
      return Math.round(ceiling / 2 + (random() * ceiling) / 2);
    },
    reset() {
      failures = 0;
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
