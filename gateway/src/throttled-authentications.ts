import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { type ApiKeyService, ThrottledAuthenticationsSchema } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import type { Logger } from "@subdata/runtime";

/**
 * Counts the authentication attempts answered 429 by the failed-authentication limit (they never reach
 * the auth service) per client address and window, and sends the counts to the auth service's security
 * log: one row per address and window, not one per request, so a client hammering at the limit costs a
 * row per window. Memory is bounded: beyond `maxAddresses` (address, window) pairs waiting, further
 * new pairs are not counted, and the next flush logs how many attempts went uncounted.
 */
export interface ThrottledAuthentications {
  /** One throttled attempt from `clientIp`, now. */
  count(clientIp: string): void;
  /** Sends every count gathered so far; on failure they are kept (within the bound) for the next flush. */
  flush(): Promise<void>;
  /** Flushes once per window until close(). */
  start(): void;
  /** Stops the timer and flushes what is left. */
  close(): Promise<void>;
}

export interface ThrottledAuthenticationsOptions {
  apiKeys: Pick<Client<typeof ApiKeyService>, "recordThrottledAuthentications">;
  /** SUBDATA_AUTH_FAILURE_WINDOW_SECONDS: the window counts are aggregated over. */
  windowSeconds: number;
  /** SUBDATA_AUTH_FAILURE_MAX_CLIENTS: (address, window) pairs held at most. */
  maxAddresses: number;
  timeoutMs: number;
  logger: Pick<Logger, "warn">;
  now?: () => number;
}

/** What the auth service takes per call. */
const MAX_PER_CALL = 1_000;

interface Count {
  clientIp: string;
  windowStartMs: number;
  attempts: number;
}

export function createThrottledAuthentications(options: ThrottledAuthenticationsOptions): ThrottledAuthentications {
  const now = options.now ?? Date.now;
  const windowMs = options.windowSeconds * 1000;
  let counts = new Map<string, Count>();
  let uncounted = 0;
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  const add = (target: Map<string, Count>, entry: Count): boolean => {
    const key = `${entry.windowStartMs} ${entry.clientIp}`;
    const seen = target.get(key);
    if (seen) {
      seen.attempts += entry.attempts;
      return true;
    }
    if (target.size >= options.maxAddresses) return false;
    target.set(key, { ...entry });
    return true;
  };

  async function send(): Promise<void> {
    const batch = [...counts.values()];
    counts = new Map();
    if (uncounted > 0) {
      options.logger.warn({ uncounted }, "throttled authentication attempts beyond the counter's bound were not counted");
      uncounted = 0;
    }
    for (let start = 0; start < batch.length; start += MAX_PER_CALL) {
      const chunk = batch.slice(start, start + MAX_PER_CALL);
      try {
        await options.apiKeys.recordThrottledAuthentications(
          {
            throttled: chunk.map((entry) =>
              create(ThrottledAuthenticationsSchema, {
                clientIp: entry.clientIp,
                windowStart: timestampFromMs(entry.windowStartMs),
                attempts: BigInt(entry.attempts),
              }),
            ),
          },
          { timeoutMs: options.timeoutMs },
        );
      } catch (error) {
        // Kept for the next flush; what does not fit the bound any more is reported as uncounted then.
        const unsent = batch.slice(start);
        for (const entry of unsent) if (!add(counts, entry)) uncounted += entry.attempts;
        options.logger.warn({ err: error, pairs: unsent.length }, "throttled authentication counts not recorded yet; kept for the next flush");
        return;
      }
    }
  }

  return {
    count(clientIp) {
      const windowStartMs = Math.floor(now() / windowMs) * windowMs;
      if (!add(counts, { clientIp, windowStartMs, attempts: 1 })) uncounted += 1;
    },
    flush() {
      // One flush at a time, so counts are never sent twice.
      flushing = flushing.then(send);
      return flushing;
    },
    start() {
      timer ??= setInterval(() => void this.flush(), windowMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await this.flush();
    },
  };
}
