import type { CallOptions, Client } from "@connectrpc/connect";
import type { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import type { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import type { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { PUBLIC_LIST_START, publicFeedEnd, publicListEnd } from "@subdata/runtime";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ProblemError } from "./problem.ts";
import {
  getSubscriptionQuerySchema,
  listChargesQuerySchema,
  listEventsQuerySchema,
  listOrdersQuerySchema,
  listSubscriptionsQuerySchema,
  subscriptionIdPattern,
} from "./schemas.ts";
import "./request-context.ts";
import type { WaitingReads } from "./waiting-reads.ts";

/**
 * The public read routes, the single registration point. Handlers translate query parameters to one
 * upstream RPC asking for the public rendering (render_public_json), and send the items the query
 * service rendered as they came, inside the list envelope: the gateway neither decodes, nor renders,
 * nor re-serialises them (docs/decisions.md). Errors propagate to the error handler (problem.ts).
 * Registered inside the authenticated scope (server.ts).
 */

export interface RoutesDeps {
  subscriptions: Client<typeof SubscriptionService>;
  orders: Client<typeof OrderService>;
  /** Feed reads that answer at once; they share the query slots with the lists. */
  events: Client<typeof EventService>;
  /** Feed reads that may wait (long poll): over a session of their own, outside the query slots. */
  waitingEvents: Client<typeof EventService>;
  waitingReads: WaitingReads;
  timeoutMs: number;
}

const ALLOWED_METHODS = "GET, HEAD";
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

const JSON_CONTENT_TYPE = "application/json; charset=utf-8";
const LIST_START = Buffer.from(PUBLIC_LIST_START);

/** Pre-rendered JSON from upstream; empty would be a query service that ignored render_public_json. */
function requireRendered(json: Uint8Array, method: string): Uint8Array {
  if (json.length === 0) throw new Error(`${method} answered without public_json (query service older than the gateway?)`);
  return json;
}

interface RenderedPage {
  publicJson: Uint8Array;
  publicListJson: Uint8Array;
  publicIds: string[];
  nextPageToken: string;
}

/**
 * A page's body as bytes (the route serialiser never sees it): the list object the query service
 * rendered whole (render_public_list), sent as received, without a copy into an envelope of ours. A
 * query service older than that field answers with the items alone, which are wrapped here, with
 * `end` after them.
 */
function pageBody(request: FastifyRequest, reply: FastifyReply, page: RenderedPage, method: string, end: () => string): Uint8Array {
  request.auditResources = { resourceIds: page.publicIds, resultCount: page.publicIds.length };
  reply.type(JSON_CONTENT_TYPE);
  if (page.publicListJson.length > 0) return page.publicListJson;
  return Buffer.concat([LIST_START, requireRendered(page.publicJson, method), Buffer.from(end())]);
}

/** A feed page: next_cursor is never null, has_more says whether events follow it now. */
function feedPage(request: FastifyRequest, reply: FastifyReply, page: RenderedPage & { hasMore: boolean }) {
  return pageBody(request, reply, page, "ListEvents", () => publicFeedEnd(page.nextPageToken, page.hasMore));
}

/**
 * A list page. The upstream page token is already HMAC-signed and bound to method, merchant and
 * filter: it is the next_cursor as it is.
 */
function list(request: FastifyRequest, reply: FastifyReply, page: RenderedPage, method: string) {
  return pageBody(request, reply, page, method, () => publicListEnd(page.nextPageToken));
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

  /** A page of a list that takes an optional subscription_id (orders, charges), as the RPCs spell it. */
  const subscriptionPage = (request: FastifyRequest) => {
    const query = request.query as ListQuery & { subscription_id?: string };
    return {
      merchantId: merchantOf(request),
      pageSize: query.limit,
      pageToken: query.cursor ?? "",
      subscriptionId: query.subscription_id ?? "",
      renderPublicJson: true,
      renderPublicList: true,
    };
  };

  return async function routes(api: FastifyInstance): Promise<void> {
    api.route({
      method: READ_METHODS,
      url: "/subscriptions",
      schema: { querystring: listSubscriptionsQuerySchema },
      config: { auditRoute: "/v1/subscriptions", fieldNames: { page_size: "limit", page_token: "cursor", status: "status" } },
      handler: async (request, reply) => {
        const query = request.query as ListQuery & { status?: keyof typeof SubscriptionStatus };
        const response = await deps.subscriptions.listSubscriptions(
          {
            merchantId: merchantOf(request),
            pageSize: query.limit,
            pageToken: query.cursor ?? "",
            status: query.status ? SubscriptionStatus[query.status] : SubscriptionStatus.UNSPECIFIED,
            renderPublicJson: true,
            renderPublicList: true,
          },
          callOptions(request),
        );
        return list(request, reply, response, "ListSubscriptions");
      },
    });

    api.route({
      method: READ_METHODS,
      url: "/subscriptions/:id",
      schema: { querystring: getSubscriptionQuerySchema },
      config: { auditRoute: "/v1/subscriptions/{id}", fieldNames: { subscription_id: "id" } },
      handler: async (request, reply) => {
        const { id } = request.params as { id: string };
        request.auditResources = { resourceIds: [auditableId(id)], resultCount: 0 };
        // Malformed ids answer exactly like unknown ones, without an upstream call.
        if (!SUBSCRIPTION_ID.test(id)) throw new ProblemError("not_found");
        const response = await deps.subscriptions.getSubscription(
          { merchantId: merchantOf(request), subscriptionId: id, renderPublicJson: true },
          callOptions(request),
        );
        const subscription = requireRendered(response.publicJson, "GetSubscription");
        request.auditResources = { resourceIds: [id], resultCount: 1 };
        // Fastify sends a Uint8Array as it is (no copy, no serialiser).
        reply.type(JSON_CONTENT_TYPE);
        return subscription;
      },
    });

    api.route({
      method: READ_METHODS,
      url: "/orders",
      schema: { querystring: listOrdersQuerySchema },
      config: {
        auditRoute: "/v1/orders",
        fieldNames: { page_size: "limit", page_token: "cursor", subscription_id: "subscription_id" },
      },
      handler: async (request, reply) => list(request, reply, await deps.orders.listOrders(subscriptionPage(request), callOptions(request)), "ListOrders"),
    });

    api.route({
      method: READ_METHODS,
      url: "/charges",
      schema: { querystring: listChargesQuerySchema },
      config: {
        auditRoute: "/v1/charges",
        fieldNames: { page_size: "limit", page_token: "cursor", subscription_id: "subscription_id" },
      },
      handler: async (request, reply) =>
        list(request, reply, await deps.subscriptions.listCharges(subscriptionPage(request), callOptions(request)), "ListCharges"),
    });

    api.route({
      method: READ_METHODS,
      url: "/events",
      schema: { querystring: listEventsQuerySchema },
      config: {
        auditRoute: "/v1/events",
        fieldNames: { page_size: "limit", page_token: "cursor", types: "types", wait_seconds: "wait" },
      },
      handler: async (request, reply) => {
        const query = request.query as { limit: number; cursor?: string; types?: string; wait: number };
        const atHead = query.cursor === "head";
        const rpc = {
          merchantId: merchantOf(request),
          pageSize: query.limit,
          pageToken: atHead ? "" : (query.cursor ?? ""),
          startAtHead: atHead,
          types: query.types ? query.types.split(",") : [],
          waitSeconds: atHead ? 0 : query.wait,
          renderPublicJson: true,
          renderPublicList: true,
        };
        if (rpc.waitSeconds === 0) return feedPage(request, reply, await deps.events.listEvents(rpc, callOptions(request)));
        const slot = deps.waitingReads.admit(request.principal!.apiKeyId);
        if (slot === "key_full") {
          throw new ProblemError("rate_limited", {
            detail: "This API key already has the most long-polling reads open that it may; retry after the time given.",
            headers: { "retry-after": "1" },
          });
        }
        if (slot === "gateway_full") throw new ProblemError("unavailable");
        // A follower that hangs up stops its wait at once, freeing its slot for the reconnect.
        const hungUp = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) hungUp.abort();
        };
        reply.raw.once("close", onClose);
        try {
          const response = await deps.waitingEvents.listEvents(rpc, {
            ...callOptions(request),
            timeoutMs: deps.timeoutMs + rpc.waitSeconds * 1000,
            signal: AbortSignal.any([slot.signal, hungUp.signal]),
          });
          return feedPage(request, reply, response);
        } catch (error) {
          // The gateway is shutting down (the follower reconnects to another instance), or nobody listens.
          if (slot.signal.aborted || hungUp.signal.aborted) throw new ProblemError("unavailable");
          throw error;
        } finally {
          reply.raw.off("close", onClose);
          slot.release();
        }
      },
    });

    // Every other method on a known route: 405 with Allow (after authentication, so it is audited).
    const otherMethods = api.supportedMethods.filter((method) => method !== "GET" && method !== "HEAD");
    for (const [url, auditRoute] of [
      ["/subscriptions", "/v1/subscriptions"],
      ["/subscriptions/:id", "/v1/subscriptions/{id}"],
      ["/orders", "/v1/orders"],
      ["/charges", "/v1/charges"],
      ["/events", "/v1/events"],
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

/**
 * An id as the caller sent it, made safe for the audit log: control characters escaped, length capped.
 * A malformed id is still recorded (it was asked for), but can never make the audit write fail.
 */
function auditableId(id: string): string {
  const escaped = id.replace(/[\u0000-\u001f\u007f]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
  // The audit log keeps resource ids of at most 100 characters (services/auth/src/audit-record.ts).
  return escaped.length > 100 ? `${escaped.slice(0, 99)}…` : escaped;
}
