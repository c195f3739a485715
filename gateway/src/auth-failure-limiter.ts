import { isIPv6 } from "node:net";
import { createBoundedMap } from "./bounded-map.ts";
import { createRateLimiter, type RateLimitDecision } from "./rate-limiter.ts";

/**
 * Failed authentications per client address, counted at the edge so that guessing keys cannot cost an
 * auth RPC and a security_events row per guess. Each client address has a token bucket of `quota`
 * failures per `windowSeconds`; an empty bucket answers 429 without asking the auth service.
 *
 * An attempt takes its token before the auth service is asked, so a burst of concurrent bad keys cannot
 * all pass the check before the first one has failed; an attempt that was not a failure (the key was
 * good, or the auth service never answered) gives the token back, so successes are never counted.
 *
 * Keys that authenticated here before (by digest, never the key) skip the bucket: whoever holds one is
 * not guessing, so an attacker behind the same NAT cannot lock them out. Unknown keys from a throttled
 * address (a new key's first use included) wait like any guess. A remembered key that is later refused
 * (revoked, expired) is forgotten at once.
 *
 * Memory is bounded: both maps forget their least recently used entries in O(1) (bounded-map.ts). A
 * forgotten bucket is a full one, which is what a never-seen address gets anyway, so cycling addresses
 * gains an attacker nothing that eviction adds.
 */

export type AuthOutcome = "authenticated" | "refused" | "unanswered";

export interface AuthAttempt {
  /** False: answer 429 now and do not ask the auth service. */
  readonly allowed: boolean;
  /** The client's failure bucket after this attempt's reservation; null for a remembered key. */
  readonly decision: RateLimitDecision | null;
  /** Call once the auth service answered (or did not). */
  settle(outcome: AuthOutcome): void;
}

export interface AuthFailureLimiter {
  /** RateLimit-Policy value of the failure policy. */
  readonly policy: string;
  /** RateLimit value for a decision of this limiter. */
  field(decision: RateLimitDecision): string;
  /**
   * Before asking the auth service. `clientIp` as the audit sees it (trust-proxy applied); `digest` is
   * the presented key's digest, or null when no key was presented.
   */
  attempt(clientIp: string, digest: string | null): AuthAttempt;
}

export interface AuthFailureLimiterOptions {
  quota: number;
  windowSeconds: number;
  /** Epoch milliseconds. */
  now: () => number;
  /** Client buckets kept at most. */
  maxClients: number;
  /** Remembered key digests kept at most. */
  maxKnownKeys?: number;
}

const AUTH_FAILURE_POLICY_NAME = "auth_failures";

/** Longest client key kept: with trust-proxy set, request.ip may be any text a hop wrote. */
const MAX_CLIENT_KEY_LENGTH = 64;

/** The first four hextets of an IPv6 address, or undefined when it is not one. */
function ipv6Prefix64(address: string): string | undefined {
  const bare = address.split("%")[0]!;
  if (!isIPv6(bare)) return undefined;
  const [headText, tailText] = bare.split("::") as [string, string | undefined];
  const head = headText === "" ? [] : headText.split(":");
  let groups = head;
  if (tailText !== undefined) {
    const tail = tailText === "" ? [] : tailText.split(":");
    // A dotted IPv4 tail stands for two hextets.
    const tailWidth = tail.length + (tail.at(-1)?.includes(".") ? 1 : 0);
    groups = [...head, ...Array<string>(8 - head.length - tailWidth).fill("0"), ...tail];
  }
  return groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(":");
}

/**
 * The bucket a client address counts against: an IPv4 address as itself (also when written
 * IPv4-mapped), an IPv6 address by its /64, the smallest block one subscriber is usually given, so
 * hopping within it gains nothing.
 */
export function clientKeyOf(clientIp: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(clientIp);
  if (mapped) return mapped[1]!;
  const prefix = ipv6Prefix64(clientIp);
  if (prefix !== undefined) return `${prefix}::/64`;
  return clientIp.slice(0, MAX_CLIENT_KEY_LENGTH);
}

export function createAuthFailureLimiter(options: AuthFailureLimiterOptions): AuthFailureLimiter {
  const buckets = createRateLimiter({
    quota: options.quota,
    windowSeconds: options.windowSeconds,
    now: options.now,
    maxBuckets: options.maxClients,
    policyName: AUTH_FAILURE_POLICY_NAME,
  });
  const known = createBoundedMap<true>(options.maxKnownKeys ?? 10_000);
  const remember = (digest: string) => known.set(digest, true);

  return {
    policy: buckets.policy,
    field: (decision) => buckets.field(decision),
    attempt(clientIp, digest) {
      if (digest !== null && known.get(digest)) {
        return {
          allowed: true,
          decision: null,
          settle(outcome) {
            if (outcome === "refused") known.delete(digest);
            else if (outcome === "authenticated") remember(digest);
          },
        };
      }
      const client = clientKeyOf(clientIp);
      const decision = buckets.take(client);
      let settled = false;
      return {
        allowed: decision.allowed,
        decision,
        settle(outcome) {
          if (settled || !decision.allowed) return;
          settled = true;
          if (outcome === "refused") return;
          buckets.refund(client);
          if (outcome === "authenticated" && digest !== null) remember(digest);
        },
      };
    },
  };
}
