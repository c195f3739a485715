import type { Client } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { dateToTimestamp } from "@subdata/runtime";

/**
 * Records one authenticated read with AuditService.RecordRead. The gateway awaits it before sending
 * the response; a rejection means the read must not be served (the caller answers 503).
 */

export interface AuditEntry {
  merchantId: string;
  apiKeyId: string;
  requestId: string;
  receivedAtMs: number;
  method: string;
  /** Route template, e.g. "/v1/subscriptions/{id}". */
  route: string;
  /** Raw query string, without "?". */
  query: string;
  resourceIds: readonly string[];
  resultCount: number;
  status: number;
  clientIp: string;
  userAgent: string;
  latencyMs: number;
}

export type RecordAudit = (entry: AuditEntry) => Promise<void>;

export interface AuditRecorderDeps {
  audit: Client<typeof AuditService>;
  timeoutMs: number;
}

export function createAuditRecorder(deps: AuditRecorderDeps): RecordAudit {
  return async (entry) => {
    const latencyNanos = BigInt(Math.max(0, Math.round(entry.latencyMs * 1e6)));
    await deps.audit.recordRead(
      {
        merchantId: entry.merchantId,
        apiKeyId: entry.apiKeyId,
        requestId: entry.requestId,
        occurredAt: dateToTimestamp(new Date(entry.receivedAtMs)),
        method: entry.method,
        route: entry.route,
        query: entry.query,
        resourceIds: [...entry.resourceIds],
        resultCount: entry.resultCount,
        status: entry.status,
        clientIp: entry.clientIp,
        userAgent: entry.userAgent,
        latency: { seconds: latencyNanos / 1_000_000_000n, nanos: Number(latencyNanos % 1_000_000_000n) },
      },
      { timeoutMs: deps.timeoutMs },
    );
  };
}
