import { create } from "@bufbuild/protobuf";
import { type PortalSession, PortalSessionSchema } from "@subdata/proto/subdata/console/v1/portal_session_pb";
import { pgTimestampToProto, pgTimestampToProtoOrUndefined } from "@subdata/runtime";
import type { PortalSessionRow } from "./session-repository.ts";

export function portalSessionMessage(row: PortalSessionRow): PortalSession {
  return create(PortalSessionSchema, {
    id: row.id,
    merchantId: row.merchant_id,
    userId: row.user_id,
    userName: row.user_name,
    createdAt: pgTimestampToProto(row.created_at),
    expiresAt: pgTimestampToProto(row.expires_at),
    openedAt: pgTimestampToProtoOrUndefined(row.opened_at),
    revokedAt: pgTimestampToProtoOrUndefined(row.revoked_at),
  });
}
