import type { Logger } from "@subdata/runtime";
import type { ApiKeyRepository } from "./api-key-repository.ts";

const INTERVAL_MS = 60_000;
/** Keys remembered at most; past it, forgotten entries older than INTERVAL_MS are dropped first. */
const DEFAULT_MAX_TRACKED = 10_000;
/** UPDATEs in flight at most: a slow database must not collect a growing pile of them. */
const DEFAULT_MAX_IN_FLIGHT = 16;

/**
 * Keeps api_keys.last_used_at roughly current without a write per request: at most one UPDATE per key
 * per minute from this process (the UPDATE's own condition keeps several processes cheap too). Fire
 * and forget: authentication never waits for it.
 *
 * Bounded: it remembers at most `maxTracked` keys and runs at most `maxInFlight` UPDATEs at once. A
 * touch that finds either full is skipped (the next authentication of that key tries again): under a
 * flood of distinct keys or a slow database, last_used_at lags rather than memory growing.
 */
export interface LastUsedTracker {
  touch(apiKeyId: string): void;
  /** Keys remembered now: at most `maxTracked`. */
  readonly tracked: number;
}

export function createLastUsedTracker(options: {
  repository: Pick<ApiKeyRepository, "touchLastUsed">;
  logger: Logger;
  now?: () => number;
  maxTracked?: number;
  maxInFlight?: number;
}): LastUsedTracker {
  const now = options.now ?? Date.now;
  const maxTracked = options.maxTracked ?? DEFAULT_MAX_TRACKED;
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const lastTouched = new Map<string, number>();
  let inFlight = 0;
  let prunedAt = Number.NEGATIVE_INFINITY;
  return {
    get tracked() {
      return lastTouched.size;
    },
    touch(apiKeyId) {
      const at = now();
      const previous = lastTouched.get(apiKeyId);
      if (previous !== undefined && at - previous < INTERVAL_MS) return;
      if (inFlight >= maxInFlight) return;
      if (previous === undefined && lastTouched.size >= maxTracked) {
        // A full pass at most once a second, so a flood of new keys cannot make every touch scan the map.
        if (at - prunedAt < 1_000) return;
        prunedAt = at;
        for (const [id, touched] of lastTouched) if (at - touched >= INTERVAL_MS) lastTouched.delete(id);
        if (lastTouched.size >= maxTracked) return;
      }
      lastTouched.set(apiKeyId, at);
      inFlight++;
      options.repository
        .touchLastUsed(apiKeyId)
        .catch((error: unknown) => {
          // Forget the touch so the next authentication tries again.
          lastTouched.delete(apiKeyId);
          options.logger.warn({ err: error, apiKeyId }, "could not update last_used_at");
        })
        .finally(() => {
          inFlight--;
        });
    },
  };
}
