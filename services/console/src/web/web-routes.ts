import type { FastifyInstance } from "fastify";
import { createAuditScreen } from "./audit-screen.ts";
import type { ConsoleWebDeps } from "./console-context.ts";
import { createEndpointScreen } from "./endpoint-screen.ts";
import { createKeysScreen } from "./keys-screen.ts";
import { createWebhooksScreen } from "./webhooks-screen.ts";

/** The page's one route table: every screen and every change it makes. */
export function registerScreens(app: FastifyInstance, deps: ConsoleWebDeps): void {
  const keys = createKeysScreen(deps);
  app.get("/console/keys", keys.list);
  app.post("/console/keys", keys.create);
  app.get("/console/keys/:keyId/revoke", keys.confirmRevoke);
  app.post("/console/keys/:keyId/revoke", keys.revoke);

  const webhooks = createWebhooksScreen(deps);
  app.get("/console/webhooks", webhooks.list);
  app.post("/console/webhooks", webhooks.create);

  const endpoint = createEndpointScreen(deps);
  app.get("/console/webhooks/:endpointId", endpoint.show);
  app.post("/console/webhooks/:endpointId/update", endpoint.update);
  app.post("/console/webhooks/:endpointId/status", endpoint.setStatus);
  app.post("/console/webhooks/:endpointId/rotate", endpoint.rotate);
  app.post("/console/webhooks/:endpointId/test", endpoint.sendTest);
  app.get("/console/webhooks/:endpointId/delete", endpoint.confirmDelete);
  app.post("/console/webhooks/:endpointId/delete", endpoint.remove);
  app.post("/console/webhooks/:endpointId/resend", endpoint.resend);
  app.post("/console/webhooks/:endpointId/replay", endpoint.replay);
  app.get("/console/webhooks/:endpointId/deliveries/:deliveryId", endpoint.attempts);

  const audit = createAuditScreen(deps);
  app.get("/console/audit", audit.list);
  app.get("/console/audit.csv", audit.exportCsv);
}
