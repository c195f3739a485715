import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { chargeMessage, createOrderRepository, createSubscriptionRepository, orderMessage, subscriptionMessage, subscriptionStatusToDb } from "@subdata/query";
import {
  createPageTokenCodec,
  cursorToPosition,
  type PageTokenBinding,
  type Pool,
  positionToCursor,
  renderCharge,
  renderOrder,
  renderSubscription,
  splitPage,
} from "@subdata/runtime";

/**
 * The floor the architecture is judged against: one node:http process over one pg pool, serving the
 * gateway's read routes from the same database with the query service's own repositories (same SQL,
 * same named statements), the same row→object→JSON renderers and the same signed cursors (a cursor
 * from one works on the other). What it leaves out is the architecture: no RPC hop, no auth service
 * (one fixed key compared in constant time), no audit, no rate limit, no schema validation.
 */

export interface BaselineDeps {
  pool: Pool;
  pageTokenSecret: string;
  /** The one key it accepts, and the merchant that key belongs to. */
  apiKey: string;
  merchantId: string;
}

const SUBSCRIPTIONS_METHOD = `${SubscriptionService.typeName}/${SubscriptionService.method.listSubscriptions.name}`;
const ORDERS_METHOD = `${OrderService.typeName}/${OrderService.method.listOrders.name}`;
const SUBSCRIPTION_PATH = /^\/api\/v1\/subscriptions\/([^/]+)$/;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

const digest = (text: string) => createHash("sha256").update(text).digest();

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": status === 200 ? "application/json; charset=utf-8" : "application/problem+json",
    "content-length": Buffer.byteLength(text),
    "cache-control": "private, no-store",
  });
  response.end(text);
}

function pageSize(params: URLSearchParams): number {
  const text = params.get("limit");
  if (text === null) return 50;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > 200) throw new HttpError(400, "invalid_parameter");
  return value;
}

export function createBaselineServer(deps: BaselineDeps): Server {
  const subscriptions = createSubscriptionRepository(deps.pool);
  const orders = createOrderRepository(deps.pool);
  const tokens = createPageTokenCodec(deps.pageTokenSecret);
  const expectedKey = digest(`Bearer ${deps.apiKey}`);
  const merchantId = deps.merchantId;

  const decodeCursor = (params: URLSearchParams, binding: PageTokenBinding) => {
    const cursor = params.get("cursor");
    if (cursor === null) return null;
    try {
      return positionToCursor(tokens.decode(cursor, binding));
    } catch {
      throw new HttpError(400, "invalid_cursor");
    }
  };

  async function route(url: URL): Promise<unknown> {
    const params = url.searchParams;
    if (url.pathname === "/api/v1/subscriptions") {
      const statusName = params.get("status");
      const status = statusName === null ? null : subscriptionStatusToDb(SubscriptionStatus[statusName as keyof typeof SubscriptionStatus] ?? -1);
      if (status === undefined) throw new HttpError(400, "invalid_parameter");
      const size = pageSize(params);
      const binding: PageTokenBinding = { method: SUBSCRIPTIONS_METHOD, merchantId, filter: { status: status ?? "" } };
      const rows = await subscriptions.list({ merchantId, status, after: decodeCursor(params, binding), limit: size + 1 });
      const { page, next } = splitPage(rows, size, (row) => ({ at: row.created_at, id: row.id }));
      const nextCursor = next === null ? null : tokens.encode(binding, cursorToPosition(next));
      return { object: "list", data: page.map((row) => renderSubscription(subscriptionMessage(row))), has_more: nextCursor !== null, next_cursor: nextCursor };
    }
    if (url.pathname === "/api/v1/orders") {
      const subscriptionId = params.get("subscription_id");
      const size = pageSize(params);
      const binding: PageTokenBinding = { method: ORDERS_METHOD, merchantId, filter: { subscription_id: subscriptionId ?? "" } };
      const rows = await orders.list({ merchantId, subscriptionId, after: decodeCursor(params, binding), limit: size + 1 });
      const { page, next } = splitPage(rows, size, (row) => ({ at: row.created_at, id: row.id }));
      const nextCursor = next === null ? null : tokens.encode(binding, cursorToPosition(next));
      return { object: "list", data: page.map((row) => renderOrder(orderMessage(row))), has_more: nextCursor !== null, next_cursor: nextCursor };
    }
    const match = SUBSCRIPTION_PATH.exec(url.pathname);
    if (match) {
      const row = await subscriptions.findWithCharges(merchantId, decodeURIComponent(match[1] as string));
      if (row === undefined) throw new HttpError(404, "not_found");
      return { ...renderSubscription(subscriptionMessage(row)), charges: row.charges.map((charge) => renderCharge(chargeMessage(charge))) };
    }
    throw new HttpError(404, "not_found");
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://baseline");
    if (url.pathname === "/healthz") return send(response, 200, { status: "ok" });
    const presented = digest(request.headers.authorization ?? "");
    if (!timingSafeEqual(presented, expectedKey)) return send(response, 401, { code: "invalid_api_key" });
    if (request.method !== "GET") return send(response, 405, { code: "method_not_allowed" });
    send(response, 200, await route(url));
  }

  return createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (error instanceof HttpError) send(response, error.status, { code: error.code });
      else {
        process.stderr.write(`baseline: ${(error as Error).stack ?? String(error)}\n`);
        send(response, 500, { code: "internal" });
      }
    });
  });
}
