import type { CallOptions, Client } from "@connectrpc/connect";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { renderCharge, renderOrder, renderSubscription } from "@subdata/runtime";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ProblemError } from "./problem.ts";
import {
  getSubscriptionQuerySchema,
  listOrdersQuerySchema,
  listSubscriptionsQuerySchema,
  orderListSchema,
  subscriptionIdPattern,
  subscriptionListSchema,
  subscriptionWithChargesSchema,
} from "./schemas.ts";
import "./request-context.ts";

/**
 * The public read routes, the single registration point. Handlers translate query parameters to one
 * upstream RPC and render its answer with the shared public renderers; errors propagate to the error
 * handler (problem.ts). Registered inside the authenticated scope (server.ts).
 */

export interface RoutesDeps {
  subscriptions: Client<typeof SubscriptionService>;
  orders: Client<typeof OrderService>;
  timeoutMs: number;
}

export const ALLOWED_METHODS = "GET, HEAD";
/**
 * HEAD is registered explicitly rather than through Fastify's automatic HEAD routes, so it runs the
 * same onSend hooks as GET (compression included) and announces exactly the same headers.
 */
const READ_METHODS = ["GET", "HEAD"];

const SUBSCRIPTION_ID = new RegExp(subscriptionIdPattern);

interface ListQuery {
  limit: number;
  cursor?: string;
}

function list<T extends { id: string }>(request: FastifyRequest, data: T[], nextPageToken: string) {
  request.auditResources = { resourceIds: data.map((item) => item.id), resultCount: data.length };
  // The upstream page token is already HMAC-signed and bound to method, merchant and filter: pass it on.
  const nextCursor = nextPageToken === "" ? null : nextPageToken;
  return { object: "list" as const, data, has_more: nextCursor !== null, next_cursor: nextCursor };
}

export function createRoutes(deps: RoutesDeps) {
  const callOptions = (request: FastifyRequest): CallOptions => ({
    timeoutMs: deps.timeoutMs,
    headers: { "request-id": request.id },
  });
  const merchantOf = (request: FastifyRequest): string => {
    if (!request.principal) throw new Error("route reached without authentication");
    return request.principal.merchantId;
  };

  return async function routes(api: FastifyInstance): Promise<void> {
    api.route({
      method: READ_METHODS,
      url: "/subscriptions",
        schema: { querystring: listSubscriptionsQuerySchema, response: { 200: subscriptionListSchema } },
        config: { auditRoute: "/v1/subscriptions", fieldNames: { page_size: "limit", page_token: "cursor", status: "status" } },
      handler: async (request) => {
        const query = request.query as ListQuery & { status?: keyof typeof SubscriptionStatus };
        const response = await deps.subscriptions.listSubscriptions(
          {
            merchantId: merchantOf(request),
            pageSize: query.limit,
            pageToken: query.cursor ?? "",
            status: query.status ? SubscriptionStatus[query.status] : SubscriptionStatus.UNSPECIFIED,
          },
          callOptions(request),
        );
        return list(request, response.subscriptions.map(renderSubscription), response.nextPageToken);
      },
    });

    api.route({
      method: READ_METHODS,
      url: "/subscriptions/:id",
        schema: { querystring: getSubscriptionQuerySchema, response: { 200: subscriptionWithChargesSchema } },
        config: { auditRoute: "/v1/subscriptions/{id}", fieldNames: { subscription_id: "id" } },
      handler: async (request) => {
        const { id } = request.params as { id: string };
        request.auditResources = { resourceIds: [id], resultCount: 0 };
        // Malformed ids answer exactly like unknown ones, without an upstream call.
        if (!SUBSCRIPTION_ID.test(id)) throw new ProblemError("not_found");
        const response = await deps.subscriptions.getSubscription(
          { merchantId: merchantOf(request), subscriptionId: id },
          callOptions(request),
        );
        if (!response.subscription) throw new Error("GetSubscription answered without a subscription");
        request.auditResources = { resourceIds: [id], resultCount: 1 };
        return { ...renderSubscription(response.subscription), charges: response.charges.map(renderCharge) };
      },
    });

    api.route({
      method: READ_METHODS,
      url: "/orders",
        schema: { querystring: listOrdersQuerySchema, response: { 200: orderListSchema } },
        config: {
          auditRoute: "/v1/orders",
          fieldNames: { page_size: "limit", page_token: "cursor", subscription_id: "subscription_id" },
        },
      handler: async (request) => {
        const query = request.query as ListQuery & { subscription_id?: string };
        const response = await deps.orders.listOrders(
          {
            merchantId: merchantOf(request),
            pageSize: query.limit,
            pageToken: query.cursor ?? "",
            subscriptionId: query.subscription_id ?? "",
          },
          callOptions(request),
        );
        return list(request, response.orders.map(renderOrder), response.nextPageToken);
      },
    });

    // Every other method on a known route: 405 with Allow (after authentication, so it is audited).
    const otherMethods = api.supportedMethods.filter((method) => method !== "GET" && method !== "HEAD");
    for (const [url, auditRoute] of [
      ["/subscriptions", "/v1/subscriptions"],
      ["/subscriptions/:id", "/v1/subscriptions/{id}"],
      ["/orders", "/v1/orders"],
    ] as const) {
      api.route({
        method: otherMethods,
        url,
        config: { auditRoute },
        handler: async () => {
          throw new ProblemError("method_not_allowed", { headers: { allow: ALLOWED_METHODS } });
        },
      });
    }
  };
}
