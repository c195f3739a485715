import { create } from "@bufbuild/protobuf";
import { eventTypeOf } from "@subdata/events";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type Endpoint, EndpointSchema, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import { pgTimestampToProto, pgTimestampToProtoOrUndefined } from "@subdata/runtime";
import type { EndpointRow, EndpointStatusText } from "./endpoint-repository.ts";

const STATUS: Record<EndpointStatusText, EndpointStatus> = {
  ENABLED: EndpointStatus.ENABLED,
  DISABLED: EndpointStatus.DISABLED,
};

/** The database text of an endpoint status; undefined for UNSPECIFIED or unknown values. */
export function endpointStatusToDb(status: EndpointStatus): EndpointStatusText | undefined {
  if (status === EndpointStatus.ENABLED) return "ENABLED";
  if (status === EndpointStatus.DISABLED) return "DISABLED";
  return undefined;
}

/** An endpoint as the API shows it. The row type carries no secret, so none can slip in here. */
export function endpointMessage(row: EndpointRow): Endpoint {
  return create(EndpointSchema, {
    id: row.id,
    merchantId: row.merchant_id,
    url: row.url,
    description: row.description,
    // UNSPECIFIED for a name this build does not know (a newer writer), rather than failing a whole list.
    eventTypes: row.event_types.map((name) => eventTypeOf(name) ?? EventType.UNSPECIFIED),
    status: STATUS[row.status],
    disabledReason: row.disabled_reason ?? "",
    createdAt: pgTimestampToProto(row.created_at),
    updatedAt: pgTimestampToProto(row.updated_at),
    previousSecretExpiresAt: pgTimestampToProtoOrUndefined(row.previous_secret_expires_at),
  });
}
