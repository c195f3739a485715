import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreatePortalSessionResponseSchema,
  type PortalSessionService,
  RevokePortalSessionResponseSchema,
} from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { invalidArgument, isIdWithPrefix, type Logger, notFound, requireMerchantId, requireNoNul } from "@subdata/runtime";
import { portalSessionMessage } from "./portal-session-message.ts";
import type { SessionRepository } from "./session-repository.ts";
import { newToken, tokenHash } from "./session-token.ts";

export interface PortalSessionServiceDeps {
  sessions: SessionRepository;
  /** SUBDATA_CONSOLE_PUBLIC_URL: links are minted under it. */
  publicUrl: string;
  logger: Logger;
}

const DEFAULT_TTL_SECONDS = 3_600;
const MIN_TTL_SECONDS = 60;
const MAX_TTL_SECONDS = 12 * 3_600;
/** A link is meant to be followed at once; one found later in a history or a log is worthless. */
const OPEN_WITHIN_SECONDS = 300;
const MAX_USER_FIELD = 200;

function requireUserField(field: string, value: string, required: boolean): string {
  if (required && value.length === 0) throw invalidArgument(field, "is required");
  if ([...value].length > MAX_USER_FIELD) throw invalidArgument(field, `must be at most ${MAX_USER_FIELD} characters`);
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalidArgument(field, "must not contain control characters");
  return requireNoNul(field, value);
}

export function createPortalSessionService(deps: PortalSessionServiceDeps): ServiceImpl<typeof PortalSessionService> {
  return {
    async createPortalSession(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const userId = requireUserField("user_id", request.userId, true);
      const userName = requireUserField("user_name", request.userName, false);
      let ttlSeconds = DEFAULT_TTL_SECONDS;
      if (request.ttl) {
        if (request.ttl.nanos !== 0) throw invalidArgument("ttl", "must be whole seconds");
        ttlSeconds = Number(request.ttl.seconds);
        if (ttlSeconds < MIN_TTL_SECONDS || ttlSeconds > MAX_TTL_SECONDS) throw invalidArgument("ttl", "must be between 1 minute and 12 hours");
      }
      const token = newToken();
      const row = await deps.sessions.insert({
        merchantId,
        userId,
        userName,
        openTokenHash: tokenHash(token),
        ttlSeconds,
        openWithinSeconds: OPEN_WITHIN_SECONDS,
      });
      if (!row) throw notFound("merchant");
      // The id and the user, never the URL: until it is opened the URL is a credential.
      deps.logger.info({ portalSessionId: row.id, merchantId, userId }, "portal session created");
      const url = `${deps.publicUrl}/open?token=${token}`;
      return create(CreatePortalSessionResponseSchema, { portalSession: portalSessionMessage(row), url });
    },

    async revokePortalSession(request) {
      const merchantId = requireMerchantId(request.merchantId);
      if (request.portalSessionId === "") throw invalidArgument("portal_session_id", "is required");
      const row = isIdWithPrefix(request.portalSessionId, "ps") ? await deps.sessions.revoke(merchantId, request.portalSessionId) : undefined;
      if (!row) throw notFound("portal session");
      deps.logger.info({ portalSessionId: row.id, merchantId }, "portal session revoked");
      return create(RevokePortalSessionResponseSchema, { portalSession: portalSessionMessage(row) });
    },
  };
}
