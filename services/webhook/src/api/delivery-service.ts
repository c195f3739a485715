import { create } from "@bufbuild/protobuf";
import { type Duration, DurationSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListAttemptsResponseSchema,
  ListDeliveriesResponseSchema,
  ReplayEventsResponseSchema,
  ResendEventResponseSchema,
  SummarizeDeliveriesResponse_HourSchema,
  SummarizeDeliveriesResponseSchema,
  WebhookDeliveryService,
} from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import {
  cursorToPosition,
  dateToTimestamp,
  invalidArgument,
  notFound,
  type PageTokenBinding,
  type PageTokenCodec,
  positionToCursor,
  requireMerchantId,
  requireTimestampInRange,
  resolvePageSize,
  splitPage,
  timestampToDate,
  timestampToPgText,
} from "@subdata/runtime";
import { attemptMessage, deliveryMessage, deliveryStatusFilter } from "./delivery-message.ts";
import type { DeliveryQueryRepository } from "./delivery-query-repository.ts";
import type { DeliveryScheduleRepository } from "./delivery-schedule-repository.ts";
import type { EndpointRepository, EndpointRow } from "./endpoint-repository.ts";
import { endpointDisabled, requireId } from "./request-fields.ts";

export interface DeliveryServiceDeps {
  endpoints: EndpointRepository;
  deliveries: DeliveryQueryRepository;
  schedule: DeliveryScheduleRepository;
  pageTokens: PageTokenCodec;
  /** Called after deliveries were scheduled, so the pipeline looks now rather than at its next poll. */
  onScheduled: () => void;
  now?: () => Date;
}

const LIST_DELIVERIES = `${WebhookDeliveryService.typeName}/ListDeliveries`;
const LIST_ATTEMPTS = `${WebhookDeliveryService.typeName}/ListAttempts`;
/** ReplayEvents bounds: one call covers at most 31 days and schedules at most 10,000 events. */
const MAX_REPLAY_RANGE_MS = 31 * 86_400_000;
const MAX_REPLAY_EVENTS = 10_000;
const HOUR_MS = 3_600_000;
/** SummarizeDeliveries' window: this many hours, the last being the current one. */
const SUMMARY_HOURS = 24;

function micros(value: bigint | null): Duration | undefined {
  if (value === null) return undefined;
  const total = BigInt(value);
  return create(DurationSchema, { seconds: total / 1_000_000n, nanos: Number(total % 1_000_000n) * 1_000 });
}

/** subdata.webhook.v1.WebhookDeliveryService: what was delivered, and delivering again. */
export function createDeliveryService(deps: DeliveryServiceDeps): ServiceImpl<typeof WebhookDeliveryService> {
  const now = deps.now ?? (() => new Date());

  async function findEndpoint(merchantId: string, endpointId: string): Promise<EndpointRow> {
    const { id, wellFormed } = requireId("endpoint_id", endpointId, "we");
    const row = wellFormed ? await deps.endpoints.find(merchantId, id) : undefined;
    if (row === undefined) throw notFound("endpoint");
    return row;
  }

  return {
    async listDeliveries(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const status = deliveryStatusFilter(request.status);
      if (status === undefined) throw invalidArgument("status", "is not a delivery status");
      const endpoint = await findEndpoint(merchantId, request.endpointId);
      const binding: PageTokenBinding = {
        method: LIST_DELIVERIES,
        merchantId,
        filter: { endpoint_id: endpoint.id, status: status ?? "" },
      };
      const before = request.pageToken === "" ? null : positionToCursor(deps.pageTokens.decode(request.pageToken, binding));
      const rows = await deps.deliveries.listDeliveries({ merchantId, endpointId: endpoint.id, status, before, limit: pageSize + 1 });
      const { page, next } = splitPage(rows, pageSize, (row) => ({ at: row.created_at, id: row.id }));
      return create(ListDeliveriesResponseSchema, {
        deliveries: page.map(deliveryMessage),
        nextPageToken: next === null ? "" : deps.pageTokens.encode(binding, cursorToPosition(next)),
      });
    },

    async listAttempts(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const { id, wellFormed } = requireId("delivery_id", request.deliveryId, "whd");
      const delivery = wellFormed ? await deps.deliveries.findDelivery(merchantId, id) : undefined;
      if (delivery === undefined) throw notFound("delivery");
      const binding: PageTokenBinding = { method: LIST_ATTEMPTS, merchantId, filter: { delivery_id: id } };
      const after = request.pageToken === "" ? null : positionToCursor(deps.pageTokens.decode(request.pageToken, binding));
      const rows = await deps.deliveries.listAttempts(merchantId, id, after, pageSize + 1);
      const { page, next } = splitPage(rows, pageSize, (row) => ({ at: row.started_at, id: row.id }));
      return create(ListAttemptsResponseSchema, {
        attempts: page.map(attemptMessage),
        nextPageToken: next === null ? "" : deps.pageTokens.encode(binding, cursorToPosition(next)),
      });
    },

    async resendEvent(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const eventId = requireId("event_id", request.eventId, "evt");
      const endpoint = await findEndpoint(merchantId, request.endpointId);
      if (endpoint.status !== "ENABLED") throw endpointDisabled();
      const row = eventId.wellFormed ? await deps.schedule.resend(merchantId, endpoint.id, eventId.id) : undefined;
      if (row === undefined) throw notFound("event");
      deps.onScheduled();
      return create(ResendEventResponseSchema, { delivery: deliveryMessage(row) });
    },

    async replayEvents(request) {
      const merchantId = requireMerchantId(request.merchantId);
      if (request.startTime === undefined) throw invalidArgument("start_time", "is required");
      requireTimestampInRange("start_time", request.startTime);
      const end = request.endTime === undefined ? undefined : requireTimestampInRange("end_time", request.endTime);
      const startMs = timestampToDate(request.startTime).getTime();
      const endMs = end === undefined ? now().getTime() : timestampToDate(end).getTime();
      if (endMs <= startMs) throw invalidArgument("end_time", "must be after start_time");
      if (endMs - startMs > MAX_REPLAY_RANGE_MS) throw invalidArgument("end_time", "the range must be at most 31 days; replay longer periods in parts");
      const endpoint = await findEndpoint(merchantId, request.endpointId);
      if (endpoint.status !== "ENABLED") throw endpointDisabled();
      const result = await deps.schedule.replay({
        merchantId,
        endpointId: endpoint.id,
        start: timestampToPgText(request.startTime),
        end: end === undefined ? new Date(endMs).toISOString() : timestampToPgText(end),
        max: MAX_REPLAY_EVENTS,
      });
      if (result.exceeded) {
        throw invalidArgument("end_time", `more than ${MAX_REPLAY_EVENTS} events match; replay a shorter range`);
      }
      if (result.scheduled > 0) deps.onScheduled();
      return create(ReplayEventsResponseSchema, { scheduledCount: result.scheduled });
    },

    async summarizeDeliveries(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const endpoint = await findEndpoint(merchantId, request.endpointId);
      const end = now();
      const start = new Date((Math.floor(end.getTime() / HOUR_MS) - (SUMMARY_HOURS - 1)) * HOUR_MS);
      const rows = await deps.deliveries.summarizeAttempts(merchantId, endpoint.id, start.toISOString(), end.toISOString());
      const byHour = new Map(rows.map((row) => [row.hour_index, row]));
      const hours = Array.from({ length: SUMMARY_HOURS }, (_, index) => {
        const row = byHour.get(index);
        return create(SummarizeDeliveriesResponse_HourSchema, {
          startTime: dateToTimestamp(new Date(start.getTime() + index * HOUR_MS)),
          succeededCount: row?.succeeded ?? 0,
          failedCount: row?.failed ?? 0,
          latencyP50: micros(row?.p50_micros ?? null),
          latencyP95: micros(row?.p95_micros ?? null),
        });
      });
      return create(SummarizeDeliveriesResponseSchema, { startTime: dateToTimestamp(start), endTime: dateToTimestamp(end), hours });
    },
  };
}
