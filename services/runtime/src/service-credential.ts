import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorReason, errorWithReason } from "./errors.ts";

/** Services that answer without the credential: Kubernetes' gRPC probes cannot send headers. */
const PUBLIC_SERVICES = new Set(["grpc.health.v1.Health"]);

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/**
 * Server side: every internal RPC must carry `Authorization: Bearer <SUBDATA_SERVICE_TOKEN>`.
 * Compared in constant time (hashes first, so lengths leak nothing either).
 */
export function requireServiceCredential(serviceToken: string): Interceptor {
  const expected = digest(`Bearer ${serviceToken}`);
  return (next) => async (request) => {
    if (!PUBLIC_SERVICES.has(request.service.typeName)) {
      const presented = digest(request.header.get("authorization") ?? "");
      if (!timingSafeEqual(presented, expected)) {
        throw errorWithReason("missing or invalid service credential", Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID);
      }
    }
    return next(request);
  };
}

/** Client side: attaches the service credential to every call. */
export function sendServiceCredential(serviceToken: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("authorization", `Bearer ${serviceToken}`);
    return next(request);
  };
}

export { ConnectError };
