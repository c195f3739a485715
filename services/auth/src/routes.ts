import type { ConnectRouter } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createApiKeyService, type ApiKeyServiceDeps } from "./api-key-service.ts";
import { createAuditService, type AuditServiceDeps } from "./audit-service.ts";

export type AuthRouteDeps = ApiKeyServiceDeps & AuditServiceDeps;

export const authServiceNames = [ApiKeyService.typeName, AuditService.typeName] as const;

/** The single registration point of the auth service's RPCs. */
export function authRoutes(deps: AuthRouteDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ApiKeyService, createApiKeyService(deps));
    router.service(AuditService, createAuditService(deps));
  };
}
