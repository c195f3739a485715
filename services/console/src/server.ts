import {
  createConnectServer,
  createHealthState,
  type ConnectObservability,
  type ConnectServer,
  type HealthState,
  type Logger,
  type CallerCredentials,
} from "@subdata/runtime";
import { consoleRoutes, consoleServiceNames, type ConsoleRouteDeps } from "./routes.ts";

export interface ConsoleServerDeps extends ConsoleRouteDeps {
  /** SUBDATA_<CALLER>_TOKEN_SHA256 of the callers it serves; rpc-access.ts decides which RPCs each may call. */
  callers: CallerCredentials;
  logger: Logger;
  health?: HealthState;
  observability?: ConnectObservability;
}

/** PortalSessionService + health as an h2c Connect server; never listens by itself. */
export function createConsoleServer(deps: ConsoleServerDeps): ConnectServer {
  return createConnectServer({
    routes: consoleRoutes(deps),
    serviceNames: consoleServiceNames,
    callers: deps.callers,
    logger: deps.logger,
    health: deps.health ?? createHealthState(),
    observability: deps.observability,
  });
}
