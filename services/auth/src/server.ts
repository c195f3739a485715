import { createConnectServer, createHealthState, type ConnectObservability, type ConnectServer, type HealthState, type Logger } from "@subdata/runtime";
import { authRoutes, authServiceNames, type AuthRouteDeps } from "./routes.ts";

export interface AuthServerDeps extends AuthRouteDeps {
  /** SUBDATA_SERVICE_TOKEN: every RPC but grpc.health.v1 must present it. */
  serviceToken: string;
  /** SUBDATA_SERVICE_TOKENS_ACCEPTED: also honoured while the service token is rotated. */
  acceptedServiceTokens?: readonly string[];
  logger: Logger;
  /** main.ts passes its own to flip readiness on SIGTERM; tests may omit it. */
  health?: HealthState;
  /** Metrics registry and trace scope of the process (main.ts); tests may omit them. */
  observability?: ConnectObservability;
}

/** The auth service (ApiKeyService + AuditService + health) as an h2c Connect server; never listens by itself. */
export function createAuthServer(deps: AuthServerDeps): ConnectServer {
  return createConnectServer({
    routes: authRoutes(deps),
    serviceNames: authServiceNames,
    serviceToken: deps.serviceToken,
    acceptedServiceTokens: deps.acceptedServiceTokens,
    logger: deps.logger,
    health: deps.health ?? createHealthState(),
    observability: deps.observability,
  });
}
