import { createPageTokenCodec, type Logger, type OverloadReason, type Queryable } from "@subdata/runtime";
import { createApiKeyRepository } from "./api-key-repository.ts";
import { createAuditRepository } from "./audit-repository.ts";
import { createAuditWriter, type AuditWriter } from "./audit-writer.ts";
import { createLastUsedTracker } from "./last-used-tracker.ts";
import type { RevocationPublisher } from "./revocation-publisher.ts";
import type { AuthRouteDeps } from "./routes.ts";
import { createSecurityEventRepository } from "./security-event-repository.ts";
import { createSecurityEventRetention, type SecurityEventRetention } from "./security-event-retention.ts";
import { createSecurityLog, type SecurityLog } from "./security-log.ts";

export interface AuthDependencyOptions {
  /** The pool (role subdata_auth); tests pass a wrapper that counts or fails queries. */
  db: Queryable;
  logger: Logger;
  /** SUBDATA_PAGE_TOKEN_SECRET: signs page tokens. */
  pageTokenSecret: string;
  /** SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: page tokens they signed are honoured too (rotation). */
  acceptedPageTokenSecrets?: readonly string[];
  revocations: RevocationPublisher;
  auditMaxBatchSize?: number;
  /** Days security events are kept (SUBDATA_SECURITY_EVENT_RETENTION_DAYS); 90 when unset. */
  securityEventRetentionDays?: number;
  /** Called after every audit flush (metrics, tests). */
  onAuditFlush?: (outcome: { size: number; ok: boolean }) => void;
  /** SUBDATA_AUDIT_QUEUE_MAX, SUBDATA_AUDIT_QUEUE_WAIT_MS: the audit writer's bounds (audit-writer.ts). */
  auditMaxQueued?: number;
  auditMaxWaitMs?: number;
  /** Called once per audit record refused by those bounds (metrics). */
  onAuditRefused?: (reason: OverloadReason) => void;
}

export interface AuthDependencies extends AuthRouteDeps {
  auditWriter: AuditWriter;
  securityLog: SecurityLog;
  /** Purges old security events; main.ts starts it, close() stops it. */
  securityRetention: SecurityEventRetention;
  /** Flushes the audit and security logs; call after the server stopped taking requests. */
  close(): Promise<void>;
}

/** Builds everything the routes need from a pool and a revocation publisher. No I/O happens here. */
export function createAuthDependencies(options: AuthDependencyOptions): AuthDependencies {
  const apiKeys = createApiKeyRepository(options.db);
  const auditEvents = createAuditRepository(options.db);
  const auditWriter = createAuditWriter({
    repository: auditEvents,
    logger: options.logger,
    maxBatchSize: options.auditMaxBatchSize,
    onFlush: options.onAuditFlush,
    maxQueued: options.auditMaxQueued,
    maxWaitMs: options.auditMaxWaitMs,
    onRefused: options.onAuditRefused,
  });
  const securityEvents = createSecurityEventRepository(options.db);
  const securityLog = createSecurityLog({ repository: securityEvents, logger: options.logger });
  const securityRetention = createSecurityEventRetention({
    repository: securityEvents,
    logger: options.logger,
    retentionDays: options.securityEventRetentionDays ?? 90,
  });
  return {
    logger: options.logger,
    apiKeys,
    auditEvents,
    auditWriter,
    securityLog,
    securityEvents,
    securityRetention,
    lastUsed: createLastUsedTracker({ repository: apiKeys, logger: options.logger }),
    revocations: options.revocations,
    pageTokens: createPageTokenCodec(options.pageTokenSecret, options.acceptedPageTokenSecrets),
    async close() {
      await Promise.all([auditWriter.close(), securityLog.close(), securityRetention.stop()]);
    },
  };
}
