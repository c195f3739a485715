import { create } from "@bufbuild/protobuf";
import { type Endpoint, EndpointSchema, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import { pgTimestampToProto, pgTimestampToProtoOrUndefined } from "@subdata/runtime";
import type { EndpointRow, EndpointStatusText } from "./endpoint-repository.ts";
import { eventTypeOf } from "./event-type-names.ts";

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
    eventTypes: row.event_types.map(eventTypeOf),
    status: STATUS[row.status],
    disabledReason: row.disabled_reason ?? "",
    createdAt: pgTimestampToProto(row.created_at),
    updatedAt: pgTimestampToProto(row.updated_at),
    previousSecretExpiresAt: pgTimestampToProtoOrUndefined(row.previous_secret_expires_at),
  });
}
