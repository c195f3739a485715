import type { Client } from "@connectrpc/connect";
import type { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import type { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import type { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import type { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import type { Logger } from "@subdata/runtime";
import type { ChangeRepository } from "../change-repository.ts";
import type { PortalSessionRow, SessionRepository } from "../session-repository.ts";

/** Typed Connect clients of the services the page drives, as an internal caller. */
export interface ConsoleClients {
  apiKeys: Client<typeof ApiKeyService>;
  audit: Client<typeof AuditService>;
  endpoints: Client<typeof WebhookEndpointService>;
  deliveries: Client<typeof WebhookDeliveryService>;
}

export interface ConsoleWebDeps {
  sessions: SessionRepository;
  changes: ChangeRepository;
  clients: ConsoleClients;
  /** SUBDATA_CONSOLE_PUBLIC_URL, e.g. "https://subdata.example.com/console". */
  publicUrl: string;
  /** SUBDATA_CONSOLE_FRAME_ANCESTORS: space-separated origins, or empty. */
  frameAncestors: string;
  upstreamTimeoutMs: number;
  logger: Logger;
}

/** What a page handler knows about the request's session. */
export interface SessionContext {
  session: PortalSessionRow;
  /** The form token every change must carry. */
  csrfToken: string;
}

/** Fastify's request, once the session hook ran. */
declare module "fastify" {
  interface FastifyRequest {
    console?: SessionContext;
  }
}
