import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorReason, errorWithReason } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { CALLERS, type Caller, callerHashVariable, callersOf, mayCall } from "./rpc-access.ts";

/** Services that answer without the credential: Kubernetes' gRPC probes cannot send headers. */
const PUBLIC_SERVICES = new Set(["grpc.health.v1.Health"]);

/** A token's SHA-256: what a server holds instead of the token, so a server's secrets let no one call as the caller. */
export function tokenSha256(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/** Per caller, the SHA-256 of each token accepted from it: one, or two while it is rotated. */
export type CallerCredentials = Readonly<Partial<Record<Caller, readonly Buffer[]>>>;

/**
 * A server's credentials from its config: `SUBDATA_<CALLER>_TOKEN_SHA256` of each caller that the access
 * table lets call one of `serviceNames` (the server's services).
 */
export function callerCredentialsFrom(config: Readonly<Record<string, unknown>>, serviceNames: readonly string[]): CallerCredentials {
  return Object.fromEntries(callersOf(serviceNames).map((caller) => [caller, (config[callerHashVariable(caller)] as readonly Buffer[] | undefined) ?? []]));
}

export interface CallerCheckOptions {
  credentials: CallerCredentials;
  /** Where a known caller's refused call is logged (caller and RPC only, never a credential). */
  logger: Logger;
}

/**
 * Server side: identifies the caller by its `Authorization: Bearer <token>` and lets the call through
 * only if rpc-access.ts allows that caller that RPC. An unknown or missing token is UNAUTHENTICATED; a
 * known caller outside the RPC's row is PERMISSION_DENIED and logged. The presented token is hashed and
 * compared in constant time with every accepted hash of every caller, with no early exit, so the time
 * taken says nothing about whether, or whose, a token matched.
 */
export function requireCallerCredential(options: CallerCheckOptions): Interceptor {
  const candidates = CALLERS.flatMap((caller) => (options.credentials[caller] ?? []).map((hash) => ({ caller, hash })));
  const identify = (header: string | null): Caller | undefined => {
    const token = header?.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
    // A missing header still costs a hash and the full comparison loop.
    const presented = tokenSha256(token ?? "");
    let found: Caller | undefined;
    for (const candidate of candidates) {
      const equal = candidate.hash.length === presented.length && timingSafeEqual(presented, candidate.hash);
      if (equal && token !== undefined) found = candidate.caller;
    }
    return found;
  };
  return (next) => async (request) => {
    if (PUBLIC_SERVICES.has(request.service.typeName)) return next(request);
    const caller = identify(request.header.get("authorization"));
    if (caller === undefined) {
      throw errorWithReason("missing or invalid service credential", Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID);
    }
    const rpc = `${request.service.typeName}/${request.method.name}`;
    if (!mayCall(caller, rpc)) {
      options.logger.warn({ caller, rpc }, "refused an RPC its caller is not allowed (docs/security.md, the access table)");
      throw new ConnectError(`the ${caller} credential may not call ${rpc}`, Code.PermissionDenied);
    }
    return next(request);
  };
}

/** Client side: attaches this caller's token to every call. */
export function sendServiceCredential(serviceToken: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("authorization", `Bearer ${serviceToken}`);
    return next(request);
  };
}
