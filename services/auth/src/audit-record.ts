import type { Duration } from "@bufbuild/protobuf/wkt";
import { invalidArgument, requireMerchantId, requireNoNul, requireTimestampInRange, timestampToPgText } from "@subdata/runtime";
import type { RecordReadRequest } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import type { AuditRecord } from "./audit-repository.ts";

// A group-committed INSERT fails for every caller of its batch, so each record is made safe to insert
// here: fields the gateway controls are validated (a bad one is a bug, refused alone), free text the
// client controls (query, user agent) is bounded and stripped of NULs, which Postgres text refuses.
// occurred_at and latency are refused outside what timestamptz and bigint microseconds hold.
const MAX_ID = 100;
const MAX_ROUTE = 200;
const MAX_QUERY = 8_192;
const MAX_USER_AGENT = 1_024;
const MAX_CLIENT_IP = 64;
const MAX_RESOURCE_IDS = 1_000;
const NUL = "\u0000";
/** google.protobuf.Duration's own bound (about 10,000 years): as microseconds it fits a bigint. */
const MAX_LATENCY_SECONDS = 315_576_000_000n;

function required(field: string, value: string, max = MAX_ID): string {
  if (value.length === 0) throw invalidArgument(field, "is required");
  return bounded(field, value, max);
}

function bounded(field: string, value: string, max: number): string {
  if (value.length > max) throw invalidArgument(field, `must be at most ${max} characters`);
  return requireNoNul(field, value);
}

function clientText(value: string, max: number): string {
  return value.replaceAll(NUL, "").slice(0, max);
}

function latencyMicros(latency: Duration | undefined): bigint {
  if (!latency) return 0n;
  if (latency.seconds < 0n || latency.nanos < 0) throw invalidArgument("latency", "must not be negative");
  if (latency.seconds > MAX_LATENCY_SECONDS || latency.nanos > 999_999_999) throw invalidArgument("latency", "is not a valid Duration");
  return latency.seconds * 1_000_000n + BigInt(Math.floor(latency.nanos / 1_000));
}

/** Validates a RecordRead request and turns it into a row that cannot make its batch fail. */
export function auditRecordFrom(request: RecordReadRequest, id: string): AuditRecord {
  if (request.resourceIds.length > MAX_RESOURCE_IDS) throw invalidArgument("resource_ids", `at most ${MAX_RESOURCE_IDS}`);
  if (request.resultCount < 0) throw invalidArgument("result_count", "must not be negative");
  if (request.status < 100 || request.status > 599) throw invalidArgument("status", "must be an HTTP status");
  return {
    id,
    occurredAt: request.occurredAt ? timestampToPgText(requireTimestampInRange("occurred_at", request.occurredAt)) : null,
    merchantId: requireMerchantId(request.merchantId),
    apiKeyId: required("api_key_id", request.apiKeyId),
    requestId: required("request_id", request.requestId),
    method: required("method", request.method, 16),
    route: bounded("route", request.route, MAX_ROUTE),
    query: clientText(request.query, MAX_QUERY),
    resourceIds: request.resourceIds.map((resourceId) => bounded("resource_ids", resourceId, MAX_ID)),
    resultCount: request.resultCount,
    status: request.status,
    // Whatever the edge saw (a proxy's X-Forwarded-For token included) is recorded, never refused.
    clientIp: clientText(request.clientIp, MAX_CLIENT_IP),
    userAgent: clientText(request.userAgent, MAX_USER_AGENT),
    latencyMicros: latencyMicros(request.latency),
  };
}
