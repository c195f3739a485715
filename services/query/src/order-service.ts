import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  cursorToPosition,
  invalidArgument,
  isIdWithPrefix,
  type PageTokenBinding,
  type PageTokenCodec,
  positionToCursor,
  publicListEnd,
  requireMerchantId,
  resolvePageSize,
  splitPage,
} from "@subdata/runtime";
import { ListOrdersResponseSchema, OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { orderMessage } from "./order-message.ts";
import type { OrderRepository } from "./order-repository.ts";
import { jsonArray, orderJson, pageJson } from "./public-json.ts";

export interface OrderServiceDeps {
  orders: OrderRepository;
  pageTokens: PageTokenCodec;
}

const LIST_METHOD = `${OrderService.typeName}/${OrderService.method.listOrders.name}`;

/** subdata.order.v1.OrderService: one merchant's orders with their line items, read-only. */
export function createOrderService(deps: OrderServiceDeps): ServiceImpl<typeof OrderService> {
  return {
    async listOrders(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const subscriptionId = request.subscriptionId === "" ? null : request.subscriptionId;
      if (subscriptionId !== null && !isIdWithPrefix(subscriptionId, "sub")) {
        throw invalidArgument("subscription_id", "must be a subscription id (sub_…)");
      }
      const binding: PageTokenBinding = { method: LIST_METHOD, merchantId, filter: { subscription_id: subscriptionId ?? "" } };
      const after = request.pageToken === "" ? null : positionToCursor(deps.pageTokens.decode(request.pageToken, binding));

      // A foreign or unknown subscription id simply matches no rows: merchant_id = $1 scopes them all.
      const rows = await deps.orders.list({ merchantId, subscriptionId, after, limit: pageSize + 1 });
      const { page, next } = splitPage(rows, pageSize, (row) => ({ at: row.created_at, id: row.id }));
      const nextPageToken = next === null ? "" : deps.pageTokens.encode(binding, cursorToPosition(next));
      if (request.renderPublicJson) {
        return create(ListOrdersResponseSchema, {
          ...pageJson(jsonArray(page, orderJson), request.renderPublicList, publicListEnd(nextPageToken)),
          publicIds: page.map((row) => row.id),
          nextPageToken,
        });
      }
      return create(ListOrdersResponseSchema, { orders: page.map(orderMessage), nextPageToken });
    },
  };
}
