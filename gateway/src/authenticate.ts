import type { Client } from "@connectrpc/connect";
import type { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { type Logger, timestampToDate } from "@subdata/runtime";
import { type ApiKeyCache, digestOfKey, type VerifiedKey } from "./api-key-cache.ts";
import type { AuthAttempt, AuthFailureLimiter } from "./auth-failure-limiter.ts";
import { ProblemError, toProblem } from "./problem.ts";
import type { ThrottledAuthentications } from "./throttled-authentications.ts";

/**
 * Who is calling: the bearer key from Authorization, verified by the auth service or found in the
 * verified-key cache. Throws a ProblemError (401 with its reason, 429 when the client address has
 * failed too often, 503 when the auth service is down).
 *
 * Every failed authentication — a missing header included — reaches the auth service's security log,
 * and every one counts against the client's failure budget, which is checked before the RPC: a client
 * over it is answered 429 at no cost upstream, and counted for the security log per address and window
 * (throttled-authentications.ts). Cached keys never touch the budget.
 */

export interface AuthenticateInput {
  authorization: string | undefined;
  clientIp: string;
  userAgent: string;
  requestId: string;
}

export type Authenticate = (input: AuthenticateInput) => Promise<VerifiedKey>;

export interface AuthenticateDeps {
  apiKeys: Client<typeof ApiKeyService>;
  cache: ApiKeyCache;
  failures: AuthFailureLimiter;
  /** Counts the attempts answered 429 here, for the security log (aggregated per address and window). */
  throttled: Pick<ThrottledAuthentications, "count">;
  logger: Pick<Logger, "warn">;
  timeoutMs: number;
}

// RFC 6750 §2.1: the scheme is case-insensitive; b64token characters only.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Says the 429 is about failed authentications from this address, not a key's request quota. */
const FAILURES_DETAIL = "Too many failed authentications from this address; retry after the time given.";

/** The presented key, or undefined when no bearer credentials were sent. */
function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  return BEARER.exec(authorization)?.[1];
}

export function createAuthenticate(deps: AuthenticateDeps): Authenticate {
  /** The failure policy's RateLimit fields, announced on 401s and 429s that counted against it. */
  function failureHeaders(attempt: AuthAttempt): Record<string, string> {
    if (!attempt.decision) return {};
    return { "ratelimit-policy": deps.failures.policy, ratelimit: deps.failures.field(attempt.decision) };
  }

  /**
   * No credentials: the auth service records it like any failed authentication (an empty key, which
   * it refuses as malformed). The answer is 401 whatever the RPC says; a lost record is only logged,
   * as the auth service does for its own security-log writes.
   */
  async function reportMissing(input: AuthenticateInput): Promise<void> {
    try {
      await deps.apiKeys.authenticateApiKey(
        { key: "", clientIp: input.clientIp, userAgent: input.userAgent, requestId: input.requestId },
        { timeoutMs: deps.timeoutMs },
      );
    } catch (error) {
      if (toProblem(error).problem.status === 401) return;
      deps.logger.warn({ err: error, requestId: input.requestId }, "missing API key not recorded in the security log");
    }
  }

  return async (input) => {
    const key = bearerToken(input.authorization);
    const digest = key === undefined ? null : digestOfKey(key);
    if (digest !== null) {
      const cached = deps.cache.get(digest);
      if (cached) return cached;
    }

    const attempt = deps.failures.attempt(input.clientIp, digest);
    const headers = failureHeaders(attempt);
    if (!attempt.allowed) {
      deps.throttled.count(input.clientIp);
      const retryAfter = String(attempt.decision?.retryAfterSeconds ?? 1);
      throw new ProblemError("rate_limited", { detail: FAILURES_DETAIL, headers: { ...headers, "retry-after": retryAfter } });
    }

    if (key === undefined || digest === null) {
      await reportMissing(input);
      attempt.settle("refused");
      throw new ProblemError("missing_api_key", { headers });
    }

    const epoch = deps.cache.epoch();
    let response;
    try {
      response = await deps.apiKeys.authenticateApiKey(
        { key, clientIp: input.clientIp, userAgent: input.userAgent, requestId: input.requestId },
        { timeoutMs: deps.timeoutMs },
      );
    } catch (error) {
      const { problem } = toProblem(error);
      if (problem.status === 401) {
        attempt.settle("refused");
        throw new ProblemError(problem.code, { headers });
      }
      // Not a verdict on the key (auth down, our misconfiguration): it costs the client nothing.
      // Upstream failures propagate as ConnectErrors; the error handler maps them through problem.ts.
      attempt.settle("unanswered");
      throw error;
    }
    attempt.settle("authenticated");
    const verified: VerifiedKey = {
      apiKeyId: response.apiKeyId,
      merchantId: response.merchantId,
      expiresAtMs: response.expiresAt ? timestampToDate(response.expiresAt).getTime() : null,
    };
    deps.cache.set(digest, verified, epoch);
    return verified;
  };
}
