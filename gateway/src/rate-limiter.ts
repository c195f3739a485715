import { createBoundedMap } from "./bounded-map.ts";

/**
 * Token buckets per key (an API key id; a client address for failed authentications), in memory, per
 * gateway instance (N instances allow N × the quota; docs/api.md says so). A bucket holds `quota`
 * tokens and refills `quota` per `windowSeconds`; a request takes one.
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
  /** Gives back a token taken for a request that turned out not to count (never above the quota). */
  refund(keyId: string): void;
  /** The RateLimit-Policy field value. */
  readonly policy: string;
  /** The RateLimit field value for a decision of this limiter. */
  field(decision: RateLimitDecision): string;
}

export interface RateLimiterOptions {
  quota: number;
  windowSeconds: number;
  /** Epoch milliseconds. */
  now: () => number;
  /** Buckets kept at most; the least recently used go first (a forgotten bucket is a full one). See bounded-map.ts. */
  maxBuckets?: number;
  /** The policy name in both fields; "default" unless several policies may show up. */
  policyName?: string;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

const RATE_LIMIT_POLICY_NAME = "default";

export function rateLimitField(decision: RateLimitDecision, policyName = RATE_LIMIT_POLICY_NAME): string {
  return `"${policyName}";r=${decision.remaining};t=${decision.resetSeconds}`;
}

export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const buckets = createBoundedMap<Bucket>(options.maxBuckets ?? 100_000);
  const capacity = options.quota;
  const tokensPerMs = options.quota / (options.windowSeconds * 1000);
  const policyName = options.policyName ?? RATE_LIMIT_POLICY_NAME;

  function refill(bucket: Bucket, now: number): void {
    bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.updatedMs) * tokensPerMs);
    bucket.updatedMs = now;
  }

  return {
    policy: `"${policyName}";q=${options.quota};w=${options.windowSeconds}`,
    field: (decision) => rateLimitField(decision, policyName),
    refund(keyId) {
      // A bucket already forgotten is a full one: nothing to give back.
      const bucket = buckets.get(keyId);
      if (!bucket) return;
      refill(bucket, options.now());
      bucket.tokens = Math.min(capacity, bucket.tokens + 1);
    },
    take(keyId) {
      const now = options.now();
      const bucket = buckets.get(keyId) ?? { tokens: capacity, updatedMs: now };
      refill(bucket, now);
      const allowed = bucket.tokens >= 1;
      if (allowed) bucket.tokens -= 1;
      buckets.set(keyId, bucket);
      return {
        allowed,
        remaining: Math.floor(bucket.tokens),
        resetSeconds: Math.ceil((capacity - bucket.tokens) / tokensPerMs / 1000),
        retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / tokensPerMs / 1000)),
      };
    },
  };
}
