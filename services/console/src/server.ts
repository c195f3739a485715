import { createConnectServer, createHealthState, type ConnectObservability, type ConnectServer, type HealthState, type Logger } from "@subdata/runtime";
import { consoleRoutes, consoleServiceNames, type ConsoleRouteDeps } from "./routes.ts";

export interface ConsoleServerDeps extends ConsoleRouteDeps {
  /** SUBDATA_SERVICE_TOKEN: every RPC but grpc.health.v1 must present it. */
  serviceToken: string;
  acceptedServiceTokens?: readonly string[];
  logger: Logger;
  health?: HealthState;
  observability?: ConnectObservability;
}

/** PortalSessionService + health as an h2c Connect server; never listens by itself. */
export function createConsoleServer(deps: ConsoleServerDeps): ConnectServer {
  return createConnectServer({
    routes: consoleRoutes(deps),
    serviceNames: consoleServiceNames,
    serviceToken: deps.serviceToken,
    acceptedServiceTokens: deps.acceptedServiceTokens,
    logger: deps.logger,
    health: deps.health ?? createHealthState(),
    observability: deps.observability,
  });
}
