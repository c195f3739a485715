import type { ConnectRouter } from "@connectrpc/connect";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { createPortalSessionService, type PortalSessionServiceDeps } from "./portal-session-service.ts";

export type ConsoleRouteDeps = PortalSessionServiceDeps;

export const consoleServiceNames = [PortalSessionService.typeName] as const;

/** The single registration point of the console service's RPCs (the page's routes are in web/web-routes.ts). */
export function consoleRoutes(deps: ConsoleRouteDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(PortalSessionService, createPortalSessionService(deps));
  };
}
