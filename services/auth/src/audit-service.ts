import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  invalidArgument,
  invalidPageToken,
  newId,
  type PageTokenCodec,
  pgTimestampToProto,
  requireMerchantId,
  requireNoNul,
  resolvePageSize,
} from "@subdata/runtime";
import { type AuditEvent, AuditEventSchema } from "@subdata/proto/subdata/audit/v1/audit_event_pb";
import {
  AuditService,
  ListAuditEventsResponseSchema,
  RecordReadResponseSchema,
  RecordReadsResponse_ResultSchema,
  RecordReadsResponseSchema,
} from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { auditRecordFrom } from "./audit-record.ts";
import type { AuditEventRow, AuditPosition, AuditRepository } from "./audit-repository.ts";
import type { AuditWriter } from "./audit-writer.ts";

export interface AuditServiceDeps {
  auditWriter: AuditWriter;
  auditEvents: Pick<AuditRepository, "list">;
  pageTokens: PageTokenCodec;
}

/** Reads per RecordReads call at most (the gateway sends what arrived during one round trip). */
const MAX_READS_PER_CALL = 1_000;

const LIST_METHOD = `${AuditService.typeName}/ListAuditEvents`;

function auditEventMessage(row: AuditEventRow): AuditEvent {
  const micros = BigInt(row.latency_micros);
  return create(AuditEventSchema, {
    id: row.id,
    merchantId: row.merchant_id,
    apiKeyId: row.api_key_id,
    requestId: row.request_id,
    occurredAt: pgTimestampToProto(row.occurred_at),
    method: row.method,
    route: row.route,
    query: row.query,
    resourceIds: row.resource_ids,
    resultCount: row.result_count,
    status: row.status,
    clientIp: row.client_ip,
    userAgent: row.user_agent,
    latency: create(DurationSchema, { seconds: micros / 1_000_000n, nanos: Number(micros % 1_000_000n) * 1_000 }),
  });
}

export function createAuditService(deps: AuditServiceDeps): ServiceImpl<typeof AuditService> {
  return {
    async recordRead(request) {
      const record = auditRecordFrom(request, newId("aud"));
      // Resolves only once the batch holding this row has committed; UNAVAILABLE otherwise.
      await deps.auditWriter.record(record);
      return create(RecordReadResponseSchema, { auditEventId: record.id });
    },

    async recordReads(request) {
      if (request.reads.length === 0 || request.reads.length > MAX_READS_PER_CALL) {
        throw invalidArgument("reads", `must hold 1–${MAX_READS_PER_CALL} reads`);
      }
      // Each read stands alone: one the gateway got wrong is refused, the rest are still recorded.
      const results = request.reads.map((read) => {
        try {
          const record = auditRecordFrom(read, newId("aud"));
          return { record, result: create(RecordReadsResponse_ResultSchema, { outcome: { case: "auditEventId", value: record.id } }) };
        } catch (error) {
          const reason = error instanceof ConnectError ? error.rawMessage : "invalid read";
          return { record: undefined, result: create(RecordReadsResponse_ResultSchema, { outcome: { case: "invalidReason", value: reason } }) };
        }
      });
      const records = results.flatMap((entry) => (entry.record ? [entry.record] : []));
      // One INSERT for the whole call; UNAVAILABLE (and nothing to serve) when it fails.
      await deps.auditWriter.recordAll(records);
      return create(RecordReadsResponseSchema, { results: results.map((entry) => entry.result) });
    },

    async listAuditEvents(request) {
      requireMerchantId(request.merchantId);
      requireNoNul("api_key_id", request.apiKeyId);
      const pageSize = resolvePageSize(request.pageSize);
      const apiKeyId = request.apiKeyId === "" ? undefined : request.apiKeyId;
      const binding = { method: LIST_METHOD, merchantId: request.merchantId, filter: { api_key_id: request.apiKeyId } };
      let after: AuditPosition | undefined;
      if (request.pageToken !== "") {
        const position = deps.pageTokens.decode(request.pageToken, binding);
        if (position.length !== 2) throw invalidPageToken();
        after = { occurredAt: position[0]!, id: position[1]! };
      }
      const rows = await deps.auditEvents.list(request.merchantId, apiKeyId, after, pageSize + 1);
      const page = rows.slice(0, pageSize);
      const last = page.at(-1);
      const nextPageToken = rows.length > pageSize && last ? deps.pageTokens.encode(binding, [last.occurred_at, last.id]) : "";
      return create(ListAuditEventsResponseSchema, { auditEvents: page.map(auditEventMessage), nextPageToken });
    },
  };
}
