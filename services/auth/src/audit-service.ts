import { create } from "@bufbuild/protobuf";
import { DurationSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  invalidArgument,
  invalidPageToken,
  newId,
  type PageTokenCodec,
  pgTimestampToProto,
  requireMerchantId,
  requireNoNul,
  requireTimestampInRange,
  resolvePageSize,
  timestampToPgText,
} from "@subdata/runtime";
import { type AuditEvent, AuditEventSchema } from "@subdata/proto/subdata/audit/v1/audit_event_pb";
import {
  AuditService,
  type ListAuditEventsRequest,
  ListAuditEventsResponseSchema,
  RecordReadResponseSchema,
  RecordReadsResponse_ResultSchema,
  RecordReadsResponseSchema,
} from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { auditRecordFrom } from "./audit-record.ts";
import type { AuditEventRow, AuditListQuery, AuditPosition, AuditRepository } from "./audit-repository.ts";
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

const MIN_STATUS = 100;
const MAX_STATUS = 599;

function statusBound(field: string, value: number): number | undefined {
  if (value === 0) return undefined;
  if (!Number.isInteger(value) || value < MIN_STATUS || value > MAX_STATUS) throw invalidArgument(field, `must be ${MIN_STATUS}–${MAX_STATUS}, or 0 for none`);
  return value;
}

/**
 * ListAuditEvents' filters, validated: what the repository selects, and what its page tokens are bound
 * to. A filter that is not set stays out of the binding, so a token made before a filter existed still
 * pages the unfiltered list.
 */
function auditFilterOf(request: ListAuditEventsRequest): { query: Omit<AuditListQuery, "merchantId" | "after" | "limit">; binding: Record<string, string> } {
  requireNoNul("api_key_id", request.apiKeyId);
  requireNoNul("route", request.route);
  const minStatus = statusBound("min_status", request.minStatus);
  const maxStatus = statusBound("max_status", request.maxStatus);
  if (minStatus !== undefined && maxStatus !== undefined && maxStatus < minStatus) throw invalidArgument("max_status", "must not be below min_status");
  const start = request.startTime === undefined ? undefined : timestampToPgText(requireTimestampInRange("start_time", request.startTime));
  const end = request.endTime === undefined ? undefined : timestampToPgText(requireTimestampInRange("end_time", request.endTime));
  if (request.startTime !== undefined && request.endTime !== undefined && compareTimestamps(request.endTime, request.startTime) <= 0) {
    throw invalidArgument("end_time", "must be after start_time");
  }
  const binding: Record<string, string> = { api_key_id: request.apiKeyId };
  if (request.route !== "") binding.route = request.route;
  if (minStatus !== undefined) binding.min_status = String(minStatus);
  if (maxStatus !== undefined) binding.max_status = String(maxStatus);
  if (start !== undefined) binding.start_time = start;
  if (end !== undefined) binding.end_time = end;
  return {
    query: {
      apiKeyId: request.apiKeyId === "" ? undefined : request.apiKeyId,
      route: request.route === "" ? undefined : request.route,
      minStatus,
      maxStatus,
      start,
      end,
    },
    binding,
  };
}

function compareTimestamps(a: Timestamp, b: Timestamp): number {
  return a.seconds === b.seconds ? a.nanos - b.nanos : a.seconds < b.seconds ? -1 : 1;
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
      const filter = auditFilterOf(request);
      const pageSize = resolvePageSize(request.pageSize);
      const binding = { method: LIST_METHOD, merchantId: request.merchantId, filter: filter.binding };
      let after: AuditPosition | undefined;
      if (request.pageToken !== "") {
        const position = deps.pageTokens.decode(request.pageToken, binding);
        if (position.length !== 2) throw invalidPageToken();
        after = { occurredAt: position[0]!, id: position[1]! };
      }
      const rows = await deps.auditEvents.list({ ...filter.query, merchantId: request.merchantId, after, limit: pageSize + 1 });
      const page = rows.slice(0, pageSize);
      const last = page.at(-1);
      const nextPageToken = rows.length > pageSize && last ? deps.pageTokens.encode(binding, [last.occurred_at, last.id]) : "";
      return create(ListAuditEventsResponseSchema, { auditEvents: page.map(auditEventMessage), nextPageToken });
    },
  };
}
