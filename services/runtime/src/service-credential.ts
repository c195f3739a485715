import { createHash, timingSafeEqual } from "node:crypto";
import { Code, type Interceptor } from "@connectrpc/connect";
import { ErrorReason, errorWithReason } from "./errors.ts";

/** Services that answer without the credential: Kubernetes' gRPC probes cannot send headers. */
const PUBLIC_SERVICES = new Set(["grpc.health.v1.Health"]);

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/**
 * Server side: every internal RPC must carry `Authorization: Bearer <SUBDATA_SERVICE_TOKEN>`, or one of
 * `accepted` (SUBDATA_SERVICE_TOKENS_ACCEPTED, the other value during a rotation). Compared in constant
 * time: hashes first, so lengths leak nothing, and against every candidate with no early exit, so the
 * time taken is the same whether and whichever one matched.
 */
export function requireServiceCredential(serviceToken: string, accepted: readonly string[] = []): Interceptor {
  const candidates = [serviceToken, ...accepted].map((token) => digest(`Bearer ${token}`));
  const matches = (header: string | null): boolean => {
    const presented = digest(header ?? "");
    let matched = 0;
    for (const candidate of candidates) matched |= Number(timingSafeEqual(presented, candidate));
    return matched === 1;
  };
  return (next) => async (request) => {
    if (!PUBLIC_SERVICES.has(request.service.typeName) && !matches(request.header.get("authorization"))) {
      throw errorWithReason("missing or invalid service credential", Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID);
    }
    return next(request);
  };
}

/** Client side: attaches the service credential to every call (always the main value, never an accepted one). */
export function sendServiceCredential(serviceToken: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("authorization", `Bearer ${serviceToken}`);
    return next(request);
  };
}
