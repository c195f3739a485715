import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { eventTypeOf } from "@subdata/events";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type Attempt, AttemptErrorClass, AttemptSchema, type Delivery, DeliverySchema, DeliveryStatus } from "@subdata/proto/subdata/webhook/v1/delivery_pb";
import { pgTimestampToProto, pgTimestampToProtoOrUndefined } from "@subdata/runtime";
import type { AttemptRow, DeliveryRow, DeliveryStatusText } from "./delivery-query-repository.ts";

const STATUS: Record<DeliveryStatusText, DeliveryStatus> = {
  PENDING: DeliveryStatus.PENDING,
  SUCCEEDED: DeliveryStatus.SUCCEEDED,
  FAILED: DeliveryStatus.FAILED,
  CANCELLED: DeliveryStatus.CANCELLED,
};

/** The database text of a delivery status filter: null for UNSPECIFIED (all), undefined if unknown. */
export function deliveryStatusFilter(status: DeliveryStatus): DeliveryStatusText | null | undefined {
  if (status === DeliveryStatus.UNSPECIFIED) return null;
  const name = DeliveryStatus[status];
  return name !== undefined && name in STATUS ? (name as DeliveryStatusText) : undefined;
}

export function deliveryMessage(row: DeliveryRow): Delivery {
  return create(DeliverySchema, {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: eventTypeOf(row.event_type) ?? EventType.UNSPECIFIED,
    subscriptionId: row.event_type.startsWith("subscription.") ? row.resource_id : "",
    resourceId: row.resource_id,
    version: row.version,
    status: STATUS[row.status],
    attemptCount: row.attempt_count,
    nextAttemptAt: pgTimestampToProto(row.next_attempt_at),
    lastAttemptAt: pgTimestampToProtoOrUndefined(row.last_attempt_at),
    deliveredAt: pgTimestampToProtoOrUndefined(row.delivered_at),
    createdAt: pgTimestampToProto(row.created_at),
  });
}

/**
 * The attempt log's error_class text ("timeout", "HTTP_STATUS", "ATTEMPT_ERROR_CLASS_DNS" all read the
 * same) as the enum; a class this build does not know is UNSPECIFIED rather than a failed list.
 */
export function attemptErrorClassOf(text: string): AttemptErrorClass {
  const name = text
    .toUpperCase()
    .replace(/^ATTEMPT_ERROR_CLASS_/, "")
    .replaceAll("-", "_");
  const value = (AttemptErrorClass as unknown as Record<string, number | undefined>)[name];
  return typeof value === "number" ? value : AttemptErrorClass.UNSPECIFIED;
}

export function attemptMessage(row: AttemptRow): Attempt {
  const micros = BigInt(row.latency_micros);
  return create(AttemptSchema, {
    id: row.id,
    deliveryId: row.delivery_id,
    attemptNumber: row.attempt_number,
    startedAt: pgTimestampToProto(row.started_at),
    latency: create(DurationSchema, { seconds: micros / 1_000_000n, nanos: Number(micros % 1_000_000n) * 1000 }),
    responseStatus: row.response_status ?? 0,
    errorClass: attemptErrorClassOf(row.error_class),
    responseBody: row.response_body,
  });
}
