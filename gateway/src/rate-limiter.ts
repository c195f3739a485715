/**
 * Per-key token buckets, in memory, per gateway instance (N instances allow N × the quota; docs/api.md
 * says so). A bucket holds `quota` tokens and refills `quota` per `windowSeconds`; a request takes one.
 * The result carries what the IETF RateLimit fields announce (draft-ietf-httpapi-ratelimit-headers):
 *   RateLimit-Policy: "default";q=<quota>;w=<window>
 *   RateLimit: "default";r=<remaining>;t=<seconds until the bucket is full again>
 * and, when refused, Retry-After = seconds until one token is back.
 */

export interface RateLimitDecision {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the bucket is full again (0 when full). */
  resetSeconds: number;
  /** Seconds until the next request would be allowed; only meaningful when refused. */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  take(keyId: string): RateLimitDecision;
  /** The RateLimit-Policy field value. */
  readonly policy: string;
}

export interface RateLimiterOptions {
  quota: number;
  windowSeconds: number;
  /** Epoch milliseconds. */
  now: () => number;
  /** Buckets kept at most; the least recently used go first (a forgotten bucket is a full one). */
  maxBuckets?: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export const RATE_LIMIT_POLICY_NAME = "default";

export function rateLimitField(decision: RateLimitDecision): string {
  return `"${RATE_LIMIT_POLICY_NAME}";r=${decision.remaining};t=${decision.resetSeconds}`;
}

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const buckets = new Map<string, Bucket>();
  const capacity = options.quota;
  const tokensPerMs = options.quota / (options.windowSeconds * 1000);
  const maxBuckets = options.maxBuckets ?? 100_000;

  return {
    policy: `"${RATE_LIMIT_POLICY_NAME}";q=${options.quota};w=${options.windowSeconds}`,
    take(keyId) {
      const now = options.now();
      const bucket = buckets.get(keyId) ?? { tokens: capacity, updatedMs: now };
      bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.updatedMs) * tokensPerMs);
      bucket.updatedMs = now;
      const allowed = bucket.tokens >= 1;
      if (allowed) bucket.tokens -= 1;
      buckets.delete(keyId);
      buckets.set(keyId, bucket);
      if (buckets.size > maxBuckets) buckets.delete(buckets.keys().next().value as string);
      return {
        allowed,
        remaining: Math.floor(bucket.tokens),
        resetSeconds: Math.ceil((capacity - bucket.tokens) / tokensPerMs / 1000),
        retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / tokensPerMs / 1000)),
      };
    },
  };
}
