import { create } from "@bufbuild/protobuf";
import { pgTimestampToProto, pgTimestampToProtoOrUndefined } from "@subdata/runtime";
import { type ApiKey, ApiKeySchema } from "@subdata/proto/subdata/auth/v1/api_key_pb";
import type { ApiKeyRow } from "./api-key-repository.ts";

/** The public description of a stored key (never the hash). */
export function apiKeyMessage(row: ApiKeyRow): ApiKey {
  return create(ApiKeySchema, {
    id: row.id,
    merchantId: row.merchant_id,
    name: row.name,
    displayPrefix: row.display_prefix,
    createdAt: pgTimestampToProto(row.created_at),
    expiresAt: pgTimestampToProtoOrUndefined(row.expires_at),
    revokedAt: pgTimestampToProtoOrUndefined(row.revoked_at),
    lastUsedAt: pgTimestampToProtoOrUndefined(row.last_used_at),
  });
}
