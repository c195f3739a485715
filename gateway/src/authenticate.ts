import type { Client } from "@connectrpc/connect";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { timestampToDate } from "@subdata/runtime";
import { type ApiKeyCache, digestOfKey, type VerifiedKey } from "./api-key-cache.ts";
import { ProblemError } from "./problem.ts";

/**
 * Who is calling: the bearer key from Authorization, verified by the auth service or found in the
 * verified-key cache. Throws a ProblemError (401 with its reason, 503 when the auth service is down).
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
  timeoutMs: number;
}

// RFC 6750 §2.1: the scheme is case-insensitive; b64token characters only.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The presented key, or undefined when no bearer credentials were sent. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  return BEARER.exec(authorization)?.[1];
}

export function createAuthenticate(deps: AuthenticateDeps): Authenticate {
  return async (input) => {
    const key = bearerToken(input.authorization);
    if (key === undefined) throw new ProblemError("missing_api_key");
    const digest = digestOfKey(key);
    const cached = deps.cache.get(digest);
    if (cached) return cached;
    const epoch = deps.cache.epoch();
    // Upstream failures propagate as ConnectErrors; the error handler maps them through problem.ts.
    const response = await deps.apiKeys.authenticateApiKey(
      { key, clientIp: input.clientIp, userAgent: input.userAgent, requestId: input.requestId },
      { timeoutMs: deps.timeoutMs },
    );
    const verified: VerifiedKey = {
      apiKeyId: response.apiKeyId,
      merchantId: response.merchantId,
      expiresAtMs: response.expiresAt ? timestampToDate(response.expiresAt).getTime() : null,
    };
    deps.cache.set(digest, verified, epoch);
    return verified;
  };
}
