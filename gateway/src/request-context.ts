import type { VerifiedKey } from "./api-key-cache.ts";
import type { FieldNames } from "./problem.ts";

/**
 * What one request carries between Fastify hooks, declared once. Set in onRequest (receivedAtMs,
 * principal), by handlers (auditResources) and read by the audit hook before the response is sent.
 */

export interface AuditResources {
  resourceIds: string[];
  resultCount: number;
}

declare module "fastify" {
  interface FastifyRequest {
    receivedAtMs: number;
    /** The verified key; null until authenticated (and for routes without authentication). */
    principal: VerifiedKey | null;
    /** Ids returned or asked for, as the handler knows them. */
    auditResources: AuditResources;
  }
  interface FastifyContextConfig {
    /** The route template recorded in the audit log, e.g. "/v1/subscriptions/{id}". */
    auditRoute?: string;
    /** Upstream proto field → public parameter, for mapping upstream field violations. */
    fieldNames?: FieldNames;
  }
}
