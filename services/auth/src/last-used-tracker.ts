import type { Logger } from "@subdata/runtime";
import type { ApiKeyRepository } from "./api-key-repository.ts";

const INTERVAL_MS = 60_000;
const PRUNE_ABOVE = 10_000;

/**
 * Keeps api_keys.last_used_at roughly current without a write per request: at most one UPDATE per key
 * per minute from this process (the UPDATE's own condition keeps several processes cheap too). Fire
 * and forget: authentication never waits for it.
 */
export interface LastUsedTracker {
  touch(apiKeyId: string): void;
}

export function createLastUsedTracker(options: { repository: Pick<ApiKeyRepository, "touchLastUsed">; logger: Logger; now?: () => number }): LastUsedTracker {
  const now = options.now ?? Date.now;
  const lastTouched = new Map<string, number>();
  return {
    touch(apiKeyId) {
      const at = now();
      const previous = lastTouched.get(apiKeyId);
      if (previous !== undefined && at - previous < INTERVAL_MS) return;
      if (lastTouched.size >= PRUNE_ABOVE) {
        for (const [id, touched] of lastTouched) if (at - touched >= INTERVAL_MS) lastTouched.delete(id);
      }
      lastTouched.set(apiKeyId, at);
      options.repository.touchLastUsed(apiKeyId).catch((error: unknown) => {
        // Forget the touch so the next authentication tries again.
        lastTouched.delete(apiKeyId);
        options.logger.warn({ err: error, apiKeyId }, "could not update last_used_at");
      });
    },
  };
}
