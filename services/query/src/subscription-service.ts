import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  cursorToPosition,
  invalidArgument,
  isIdWithPrefix,
  notFound,
  type PageTokenBinding,
  type PageTokenCodec,
  positionToCursor,
  publicListEnd,
  requireMerchantId,
  resolvePageSize,
  splitPage,
} from "@subdata/runtime";
import {
  GetSubscriptionResponseSchema,
  ListChargesResponseSchema,
  ListSubscriptionsResponseSchema,
  SubscriptionService,
} from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { subscriptionStatusToDb } from "./db-enums.ts";
import type { ChargeRepository } from "./charge-repository.ts";
import { chargeJson, jsonArray, pageJson, subscriptionJson, subscriptionWithChargesJson, utf8 } from "./public-json.ts";
import { chargeMessage, subscriptionMessage } from "./subscription-message.ts";
import type { SubscriptionRepository } from "./subscription-repository.ts";

export interface SubscriptionServiceDeps {
  subscriptions: SubscriptionRepository;
  charges: ChargeRepository;
  pageTokens: PageTokenCodec;
}

const LIST_METHOD = `${SubscriptionService.typeName}/${SubscriptionService.method.listSubscriptions.name}`;
const LIST_CHARGES_METHOD = `${SubscriptionService.typeName}/${SubscriptionService.method.listCharges.name}`;

/** subdata.subscription.v1.SubscriptionService: one merchant's subscriptions, read-only. */
export function createSubscriptionService(deps: SubscriptionServiceDeps): ServiceImpl<typeof SubscriptionService> {
  return {
    async listSubscriptions(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const status = subscriptionStatusToDb(request.status);
      if (status === undefined) throw invalidArgument("status", "is not a subscription status");
      // The token is bound to the filter as the client sent it, so a token made for one status
      // (or for all) is refused with any other.
      const binding: PageTokenBinding = { method: LIST_METHOD, merchantId, filter: { status: status ?? "" } };
      const after = request.pageToken === "" ? null : positionToCursor(deps.pageTokens.decode(request.pageToken, binding));

      const rows = await deps.subscriptions.list({ merchantId, status, after, limit: pageSize + 1 });
      const { page, next } = splitPage(rows, pageSize, (row) => ({ at: row.created_at, id: row.id }));
      const nextPageToken = next === null ? "" : deps.pageTokens.encode(binding, cursorToPosition(next));
      if (request.renderPublicJson) {
        return create(ListSubscriptionsResponseSchema, {
          ...pageJson(jsonArray(page, subscriptionJson), request.renderPublicList, publicListEnd(nextPageToken)),
          publicIds: page.map((row) => row.id),
          nextPageToken,
        });
      }
      return create(ListSubscriptionsResponseSchema, { subscriptions: page.map(subscriptionMessage), nextPageToken });
    },

    async getSubscription(request) {
      const merchantId = requireMerchantId(request.merchantId);
      if (request.subscriptionId === "") throw invalidArgument("subscription_id", "is required");
      // A malformed id cannot exist: answer exactly as for an unknown one, without a query.
      if (!isIdWithPrefix(request.subscriptionId, "sub")) throw notFound("subscription");
      const row = await deps.subscriptions.findWithCharges(merchantId, request.subscriptionId);
      if (row === undefined) throw notFound("subscription");
      if (request.renderPublicJson) return create(GetSubscriptionResponseSchema, { publicJson: utf8(subscriptionWithChargesJson(row)) });
      return create(GetSubscriptionResponseSchema, {
        subscription: subscriptionMessage(row),
        charges: row.charges.map(chargeMessage),
      });
    },

    async listCharges(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const subscriptionId = request.subscriptionId === "" ? null : request.subscriptionId;
      if (subscriptionId !== null && !isIdWithPrefix(subscriptionId, "sub")) {
        throw invalidArgument("subscription_id", "must be a subscription id (sub_…)");
      }
      const binding: PageTokenBinding = { method: LIST_CHARGES_METHOD, merchantId, filter: { subscription_id: subscriptionId ?? "" } };
      const after = request.pageToken === "" ? null : positionToCursor(deps.pageTokens.decode(request.pageToken, binding));

      // A foreign or unknown subscription id simply matches no rows: merchant_id = $1 scopes them all.
      const rows = await deps.charges.list({ merchantId, subscriptionId, after, limit: pageSize + 1 });
      const { page, next } = splitPage(rows, pageSize, (row) => ({ at: row.created_at, id: row.id }));
      const nextPageToken = next === null ? "" : deps.pageTokens.encode(binding, cursorToPosition(next));
      if (request.renderPublicJson) {
        return create(ListChargesResponseSchema, {
          ...pageJson(jsonArray(page, chargeJson), request.renderPublicList, publicListEnd(nextPageToken)),
          publicIds: page.map((row) => row.id),
          nextPageToken,
        });
      }
      return create(ListChargesResponseSchema, { charges: page.map(chargeMessage), nextPageToken });
    },
  };
}
