import {
  createConnectServer,
  createHealthState,
  type ConnectObservability,
  type ConnectServer,
  type HealthState,
  type Logger,
  type CallerCredentials,
} from "@subdata/runtime";
import { authRoutes, authServiceNames, type AuthRouteDeps } from "./routes.ts";

export interface AuthServerDeps extends AuthRouteDeps {
  /** SUBDATA_<CALLER>_TOKEN_SHA256 of the callers it serves; rpc-access.ts decides which RPCs each may call. */
  callers: CallerCredentials;
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
    callers: deps.callers,
    logger: deps.logger,
    health: deps.health ?? createHealthState(),
    observability: deps.observability,
  });
}
