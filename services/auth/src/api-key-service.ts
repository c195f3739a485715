import { createHash, timingSafeEqual } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ErrorReason,
  errorWithReason,
  invalidArgument,
  invalidPageToken,
  type Logger,
  notFound,
  type PageTokenCodec,
  pgTimestampToProto,
  pgTimestampToProtoOrUndefined,
  requireMerchantId,
  requireNoNul,
  requireTimestampInRange,
  resolvePageSize,
  timestampToDate,
  timestampToPgText,
} from "@subdata/runtime";
import {
  ApiKeyService,
  AuthenticateApiKeyResponseSchema,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
  RecordThrottledAuthenticationsResponseSchema,
  RevokeApiKeyResponseSchema,
} from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { displayPrefixOf, generateApiKey, parseApiKey } from "./api-key-format.ts";
import { apiKeyMessage } from "./api-key-message.ts";
import type { ApiKeyRepository } from "./api-key-repository.ts";
import type { LastUsedTracker } from "./last-used-tracker.ts";
import type { RevocationPublisher } from "./revocation-publisher.ts";
import type { SecurityEventReason, SecurityEventRepository, ThrottledWindow } from "./security-event-repository.ts";
import type { SecurityLog } from "./security-log.ts";

export interface ApiKeyServiceDeps {
  apiKeys: ApiKeyRepository;
  securityLog: SecurityLog;
  /** Where RecordThrottledAuthentications writes (one row per address and window). */
  securityEvents: Pick<SecurityEventRepository, "addThrottled">;
  lastUsed: LastUsedTracker;
  revocations: RevocationPublisher;
  pageTokens: PageTokenCodec;
  logger: Logger;
}

const LIST_METHOD = `${ApiKeyService.typeName}/ListApiKeys`;
const MAX_NAME_LENGTH = 100;
/** Counts per RecordThrottledAuthentications call, as the proto says. */
const MAX_THROTTLED_PER_CALL = 1_000;
const MAX_ATTEMPTS = 2_147_483_647;

/** What the API answers for each security-log reason: unknown and malformed keys look the same. */
const FAILURES: Record<SecurityEventReason, { reason: ErrorReason; message: string }> = {
  missing: { reason: ErrorReason.API_KEY_INVALID, message: "no API key was presented" },
  malformed: { reason: ErrorReason.API_KEY_INVALID, message: "the API key is invalid" },
  bad_checksum: { reason: ErrorReason.API_KEY_INVALID, message: "the API key is invalid" },
  unknown: { reason: ErrorReason.API_KEY_INVALID, message: "the API key is invalid" },
  revoked: { reason: ErrorReason.API_KEY_REVOKED, message: "the API key was revoked" },
  expired: { reason: ErrorReason.API_KEY_EXPIRED, message: "the API key has expired" },
};

function sha256(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function requireId(field: string, value: string): string {
  if (value.length === 0) throw invalidArgument(field, "is required");
  if (value.length > 100) throw invalidArgument(field, "is too long");
  return requireNoNul(field, value);
}

export function createApiKeyService(deps: ApiKeyServiceDeps): ServiceImpl<typeof ApiKeyService> {
  return {
    async createApiKey(request) {
      const merchantId = requireMerchantId(request.merchantId);
      if ([...request.name].length > MAX_NAME_LENGTH) throw invalidArgument("name", `must be at most ${MAX_NAME_LENGTH} characters`);
      if (/[\u0000-\u001f\u007f]/.test(request.name)) throw invalidArgument("name", "must not contain control characters");
      let expiresAt: string | null = null;
      if (request.expiresAt) {
        requireTimestampInRange("expires_at", request.expiresAt);
        if (timestampToDate(request.expiresAt).getTime() <= Date.now()) throw invalidArgument("expires_at", "must be in the future");
        expiresAt = timestampToPgText(request.expiresAt);
      }
      const key = generateApiKey();
      const row = await deps.apiKeys.insert({
        merchantId,
        name: request.name,
        displayPrefix: displayPrefixOf(key),
        keyHash: sha256(key),
        expiresAt,
      });
      if (!row) throw notFound("merchant");
      deps.logger.info({ apiKeyId: row.id, merchantId, displayPrefix: row.display_prefix }, "api key created");
      return create(CreateApiKeyResponseSchema, { apiKey: apiKeyMessage(row), key });
    },

    async listApiKeys(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const binding = { method: LIST_METHOD, merchantId, filter: {} };
      let after;
      if (request.pageToken !== "") {
        const position = deps.pageTokens.decode(request.pageToken, binding);
        if (position.length !== 2) throw invalidPageToken();
        after = { createdAt: position[0]!, id: position[1]! };
      }
      // One extra row tells whether another page exists, so the last page carries no token.
      const rows = await deps.apiKeys.list(merchantId, after, pageSize + 1);
      const page = rows.slice(0, pageSize);
      const last = page.at(-1);
      const nextPageToken = rows.length > pageSize && last ? deps.pageTokens.encode(binding, [last.created_at, last.id]) : "";
      return create(ListApiKeysResponseSchema, { apiKeys: page.map(apiKeyMessage), nextPageToken });
    },

    async revokeApiKey(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const apiKeyId = requireId("api_key_id", request.apiKeyId);
      const row = await deps.apiKeys.revoke(merchantId, apiKeyId);
      if (!row) throw notFound("api key");
      // Committed; tell the gateways. Repeated revocations publish again, which is what a caller
      // retrying after a lost event wants.
      deps.revocations.publish({ apiKeyId: row.id, merchantId: row.merchant_id, revokedAt: pgTimestampToProto(row.revoked_at!) });
      deps.logger.info({ apiKeyId: row.id, merchantId }, "api key revoked");
      return create(RevokeApiKeyResponseSchema, { apiKey: apiKeyMessage(row) });
    },

    async recordThrottledAuthentications(request) {
      if (request.throttled.length === 0) throw invalidArgument("throttled", "must hold at least one count");
      if (request.throttled.length > MAX_THROTTLED_PER_CALL) throw invalidArgument("throttled", `must hold at most ${MAX_THROTTLED_PER_CALL} counts`);
      // One row per address and window: counts repeated within the call are added before the upsert,
      // which cannot touch one row twice in a statement.
      const windows = new Map<string, ThrottledWindow>();
      request.throttled.forEach((count, index) => {
        const clientIp = requireId(`throttled[${index}].client_ip`, count.clientIp);
        if (!count.windowStart) throw invalidArgument(`throttled[${index}].window_start`, "is required");
        const windowStart = timestampToDate(requireTimestampInRange(`throttled[${index}].window_start`, count.windowStart));
        const attempts = Number(count.attempts);
        if (!Number.isSafeInteger(attempts) || attempts < 1 || attempts > MAX_ATTEMPTS) {
          throw invalidArgument(`throttled[${index}].attempts`, `must be between 1 and ${MAX_ATTEMPTS}`);
        }
        const key = `${clientIp} ${windowStart.toISOString()}`;
        const seen = windows.get(key);
        windows.set(key, { clientIp, windowStart, attempts: Math.min(MAX_ATTEMPTS, (seen?.attempts ?? 0) + attempts) });
      });
      await deps.securityEvents.addThrottled([...windows.values()]);
      return create(RecordThrottledAuthenticationsResponseSchema, {});
    },

    async authenticateApiKey(request) {
      const context = { clientIp: request.clientIp, userAgent: request.userAgent, requestId: request.requestId };
      const refuse = async (reason: SecurityEventReason, keyPrefix: string | null, apiKeyId: string | null) => {
        await deps.securityLog.record({ reason, keyPrefix, apiKeyId, ...context });
        const failure = FAILURES[reason];
        return errorWithReason(failure.message, Code.Unauthenticated, failure.reason);
      };

      // The gateway reports requests without any key as an empty key, for the security log.
      if (request.key === "") throw await refuse("missing", null, null);
      // Offline checks first: a malformed or mistyped key never reaches the database.
      const parsed = parseApiKey(request.key);
      if (!parsed.ok) throw await refuse(parsed.problem, parsed.displayPrefix, null);

      const hash = sha256(parsed.key);
      const row = await deps.apiKeys.findByHash(hash);
      // The lookup matched on the hash already; the explicit constant-time compare keeps it honest
      // whatever the index or a future query does.
      if (!row || row.key_hash.length !== hash.length || !timingSafeEqual(row.key_hash, hash)) {
        throw await refuse("unknown", parsed.displayPrefix, null);
      }
      if (row.revoked_at !== null) throw await refuse("revoked", parsed.displayPrefix, row.id);
      if (row.expired) throw await refuse("expired", parsed.displayPrefix, row.id);

      deps.lastUsed.touch(row.id);
      return create(AuthenticateApiKeyResponseSchema, {
        apiKeyId: row.id,
        merchantId: row.merchant_id,
        expiresAt: pgTimestampToProtoOrUndefined(row.expires_at),
      });
    },
  };
}
