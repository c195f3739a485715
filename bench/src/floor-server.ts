import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import currencyCodes from "currency-codes";
import type pg from "pg";

/**
 * The independent floor: the bench's read routes as a lean monolith would serve them, written from the
 * API contract alone — one node:http process, one pg pool, its own SQL (plain joins, named statements,
 * Postgres's default plan choice), its own rendering and its own signed cursors. It shares no code with
 * the query service or the runtime's renderers, so a fault in their SQL or rendering shows as a gap to
 * this floor (the baseline server shares them, and so shares any such fault). Like the baseline it
 * leaves out what the architecture adds: one fixed key instead of the auth service, no audit, no rate
 * limit, only the parameter checks these routes need.
 */

export interface FloorDeps {
  pool: pg.Pool;
  /** Signs its cursors: bound to the route, the merchant and the filter, like the API's. */
  cursorSecret: string;
  /** The one key it accepts, and the merchant that key belongs to. */
  apiKey: string;
  merchantId: string;
}

/** What a cursor is bound to and where it points. */
export interface FloorCursor {
  route: "subscriptions" | "orders";
  merchantId: string;
  /** The filter's value ("" without one). */
  filter: string;
  createdAt: string;
  id: string;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

const STATUSES = new Set(["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"]);
const SUBSCRIPTION_PATH = /^\/api\/v1\/subscriptions\/([^/]+)$/;
const DIGITS = new Map(currencyCodes.data.map((record) => [record.code, record.digits]));

// ---- rendering -------------------------------------------------------------------------------------

/** Postgres timestamptz text in UTC ("2026-01-02 03:04:05.678901+00") → RFC 3339 with milliseconds, truncated. */
export function rfc3339(text: string | null): string | null {
  if (text === null) return null;
  const zone = text.lastIndexOf("+");
  const fraction = text.indexOf(".", 19);
  const millis =
    fraction < 0 || fraction > zone
      ? "000"
      : text
          .slice(fraction + 1, zone)
          .padEnd(3, "0")
          .slice(0, 3);
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${millis}Z`;
}

/** Integer minor units (as text) → { amount: decimal string with ISO 4217's digits, currency }. */
export function money(minor: string, currency: string): { amount: string; currency: string } {
  const digits = DIGITS.get(currency);
  if (digits === undefined) throw new Error(`unknown currency ${currency}`);
  const negative = minor.startsWith("-");
  const magnitude = negative ? minor.slice(1) : minor;
  let amount = magnitude;
  if (digits > 0) {
    const padded = magnitude.padStart(digits + 1, "0");
    amount = `${padded.slice(0, -digits)}.${padded.slice(-digits)}`;
  }
  return { amount: negative ? `-${amount}` : amount, currency };
}

// ---- cursors ---------------------------------------------------------------------------------------

function signature(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(payload).digest("base64url").slice(0, 22);
}

export function encodeFloorCursor(secret: string, cursor: FloorCursor): string {
  const payload = Buffer.from(JSON.stringify([cursor.route, cursor.merchantId, cursor.filter, cursor.createdAt, cursor.id])).toString("base64url");
  return `${payload}.${signature(secret, payload)}`;
}

/** The position a cursor holds, if it is untampered and bound to exactly this route, merchant and filter. */
export function decodeFloorCursor(secret: string, text: string, expected: Omit<FloorCursor, "createdAt" | "id">): { createdAt: string; id: string } {
  const [payload, signed, extra] = text.split(".");
  if (!payload || !signed || extra !== undefined) throw new HttpError(400, "invalid_cursor");
  const wanted = Buffer.from(signature(secret, payload));
  const given = Buffer.from(signed);
  if (wanted.length !== given.length || !timingSafeEqual(wanted, given)) throw new HttpError(400, "invalid_cursor");
  const fields: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  if (!Array.isArray(fields) || fields.length !== 5 || fields[0] !== expected.route || fields[1] !== expected.merchantId || fields[2] !== expected.filter) {
    throw new HttpError(400, "invalid_cursor");
  }
  return { createdAt: String(fields[3]), id: String(fields[4]) };
}

// ---- SQL -------------------------------------------------------------------------------------------

const SUBSCRIPTION_COLUMNS = `s.id, s.status::text AS status, s.customer_id, c.email AS customer_email, c.name AS customer_name,
  s.plan_id, p.name AS plan_name, p.interval::text AS plan_interval, p.interval_count, s.price_minor, s.currency, s.quantity,
  s.current_period_start, s.current_period_end, s.next_charge_at, s.trial_ends_at, s.paused_at, s.cancelled_at,
  s.cancellation_reason, s.created_at, s.updated_at, s.version`;

function listSubscriptionsSql(byStatus: boolean, after: boolean): { name: string; text: string } {
  const where = ["s.merchant_id = $1"];
  if (byStatus) where.push(`s.status = $${where.length + 1}::subscription_status`);
  if (after) where.push(`(s.created_at, s.id) > ($${where.length + 1}::timestamptz, $${where.length + 2})`);
  const limit = `$${where.length + (after ? 2 : 1)}`;
  return {
    name: `floor_subscriptions_${byStatus ? "status" : "all"}_${after ? "after" : "first"}`,
    text: `SELECT ${SUBSCRIPTION_COLUMNS}
      FROM subscriptions s JOIN customers c ON c.id = s.customer_id JOIN plans p ON p.id = s.plan_id
      WHERE ${where.join(" AND ")} ORDER BY s.created_at, s.id LIMIT ${limit}`,
  };
}

const GET_SUBSCRIPTION = {
  name: "floor_subscription",
  // One row per charge (one with nulls when there is none), oldest first.
  text: `SELECT ${SUBSCRIPTION_COLUMNS}, ch.id AS charge_id, ch.status::text AS charge_status, ch.amount_minor, ch.amount_refunded_minor,
      ch.currency AS charge_currency, ch.order_id, ch.failure_code, ch.failure_message, ch.scheduled_at, ch.processed_at,
      ch.created_at AS charge_created_at, ch.version AS charge_version
    FROM subscriptions s JOIN customers c ON c.id = s.customer_id JOIN plans p ON p.id = s.plan_id
    LEFT JOIN charges ch ON ch.merchant_id = s.merchant_id AND ch.subscription_id = s.id
    WHERE s.merchant_id = $1 AND s.id = $2 ORDER BY ch.created_at, ch.id`,
};

function listOrdersSql(bySubscription: boolean, after: boolean): { name: string; text: string } {
  const where = ["o.merchant_id = $1"];
  if (bySubscription) where.push(`o.subscription_id = $${where.length + 1}`);
  if (after) where.push(`(o.created_at, o.id) > ($${where.length + 1}::timestamptz, $${where.length + 2})`);
  const limit = `$${where.length + (after ? 2 : 1)}`;
  return {
    name: `floor_orders_${bySubscription ? "subscription" : "all"}_${after ? "after" : "first"}`,
    text: `SELECT o.id, o.subscription_id, o.charge_id, o.number, o.status::text AS status, o.currency, o.subtotal_minor, o.discount_minor,
        o.shipping_minor, o.tax_minor, o.total_minor, o.created_at, o.updated_at, o.version,
        (SELECT json_agg(json_build_array(li.sku, li.title, li.quantity, li.unit_price_minor::text, li.total_minor::text) ORDER BY li.position)
           FROM order_line_items li WHERE li.order_id = o.id) AS line_items
      FROM orders o WHERE ${where.join(" AND ")} ORDER BY o.created_at, o.id LIMIT ${limit}`,
  };
}

const SUBSCRIPTIONS_SQL = {
  all: { first: listSubscriptionsSql(false, false), after: listSubscriptionsSql(false, true) },
  status: { first: listSubscriptionsSql(true, false), after: listSubscriptionsSql(true, true) },
};
const ORDERS_SQL = {
  all: { first: listOrdersSql(false, false), after: listOrdersSql(false, true) },
  subscription: { first: listOrdersSql(true, false), after: listOrdersSql(true, true) },
};

type Row = Record<string, string | number | null>;
const text = (row: Row, column: string) => row[column] as string;
const nullable = (row: Row, column: string) => row[column] as string | null;

function subscriptionJson(row: Row) {
  const currency = text(row, "currency");
  return {
    id: text(row, "id"),
    object: "subscription",
    status: text(row, "status"),
    customer: { id: text(row, "customer_id"), email: text(row, "customer_email"), name: text(row, "customer_name") },
    plan: { id: text(row, "plan_id"), name: text(row, "plan_name"), interval: text(row, "plan_interval"), interval_count: row.interval_count as number },
    price: money(text(row, "price_minor"), currency),
    quantity: row.quantity as number,
    current_period_start: rfc3339(nullable(row, "current_period_start")),
    current_period_end: rfc3339(nullable(row, "current_period_end")),
    next_charge_at: rfc3339(nullable(row, "next_charge_at")),
    trial_ends_at: rfc3339(nullable(row, "trial_ends_at")),
    paused_at: rfc3339(nullable(row, "paused_at")),
    cancelled_at: rfc3339(nullable(row, "cancelled_at")),
    cancellation_reason: nullable(row, "cancellation_reason"),
    created_at: rfc3339(nullable(row, "created_at")),
    updated_at: rfc3339(nullable(row, "updated_at")),
    version: Number(text(row, "version")),
  };
}

function chargeJson(row: Row, subscriptionId: string) {
  const currency = text(row, "charge_currency");
  return {
    id: text(row, "charge_id"),
    object: "charge",
    subscription_id: subscriptionId,
    status: text(row, "charge_status"),
    amount: money(text(row, "amount_minor"), currency),
    amount_refunded: money(text(row, "amount_refunded_minor"), currency),
    order_id: nullable(row, "order_id"),
    failure_code: nullable(row, "failure_code"),
    failure_message: nullable(row, "failure_message"),
    scheduled_at: rfc3339(nullable(row, "scheduled_at")),
    processed_at: rfc3339(nullable(row, "processed_at")),
    created_at: rfc3339(nullable(row, "charge_created_at")),
    version: Number(text(row, "charge_version")),
  };
}

function orderJson(row: Row) {
  const currency = text(row, "currency");
  const items = (row.line_items as unknown as Array<[string, string, number, string, string]> | null) ?? [];
  return {
    id: text(row, "id"),
    object: "order",
    subscription_id: text(row, "subscription_id"),
    charge_id: nullable(row, "charge_id"),
    number: Number(text(row, "number")),
    status: text(row, "status"),
    subtotal: money(text(row, "subtotal_minor"), currency),
    discount: money(text(row, "discount_minor"), currency),
    shipping: money(text(row, "shipping_minor"), currency),
    tax: money(text(row, "tax_minor"), currency),
    total: money(text(row, "total_minor"), currency),
    line_items: items.map(([sku, title, quantity, unitPrice, total]) => ({
      sku,
      title,
      quantity,
      unit_price: money(unitPrice, currency),
      total: money(total, currency),
    })),
    created_at: rfc3339(nullable(row, "created_at")),
    updated_at: rfc3339(nullable(row, "updated_at")),
    version: Number(text(row, "version")),
  };
}

// ---- HTTP ------------------------------------------------------------------------------------------

function pageSize(params: URLSearchParams): number {
  const value = params.get("limit");
  if (value === null) return 50;
  if (!/^[0-9]{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 200) throw new HttpError(400, "invalid_parameter");
  return Number(value);
}

function send(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, {
    "content-type": status === 200 ? "application/json; charset=utf-8" : "application/problem+json",
    "content-length": Buffer.byteLength(body),
    "cache-control": "private, no-store",
  });
  response.end(body);
}

export function createFloorServer(deps: FloorDeps): Server {
  const { pool, merchantId, cursorSecret } = deps;
  const expectedKey = createHash("sha256").update(`Bearer ${deps.apiKey}`).digest();

  /** A list page: size + 1 rows fetched, the extra one only says whether more follow. */
  async function page(
    route: FloorCursor["route"],
    filter: string,
    params: URLSearchParams,
    run: (after: { createdAt: string; id: string } | null, limit: number) => Promise<Row[]>,
    render: (row: Row) => unknown,
  ) {
    const size = pageSize(params);
    const cursorText = params.get("cursor");
    const after = cursorText === null ? null : decodeFloorCursor(cursorSecret, cursorText, { route, merchantId, filter });
    const rows = await run(after, size + 1);
    const more = rows.length > size;
    const shown = more ? rows.slice(0, size) : rows;
    const last = shown.at(-1);
    const next =
      more && last ? encodeFloorCursor(cursorSecret, { route, merchantId, filter, createdAt: text(last, "created_at"), id: text(last, "id") }) : null;
    return JSON.stringify({ object: "list", data: shown.map(render), has_more: next !== null, next_cursor: next });
  }

  async function route(url: URL): Promise<string> {
    const params = url.searchParams;
    if (url.pathname === "/api/v1/subscriptions") {
      const status = params.get("status");
      if (status !== null && !STATUSES.has(status)) throw new HttpError(400, "invalid_parameter");
      const variants = status === null ? SUBSCRIPTIONS_SQL.all : SUBSCRIPTIONS_SQL.status;
      return page(
        "subscriptions",
        status ?? "",
        params,
        async (after, limit) => {
          const values: unknown[] = [merchantId, ...(status === null ? [] : [status]), ...(after ? [after.createdAt, after.id] : []), limit];
          return (await pool.query<Row>({ ...(after ? variants.after : variants.first), values })).rows;
        },
        subscriptionJson,
      );
    }
    if (url.pathname === "/api/v1/orders") {
      const subscriptionId = params.get("subscription_id");
      const variants = subscriptionId === null ? ORDERS_SQL.all : ORDERS_SQL.subscription;
      return page(
        "orders",
        subscriptionId ?? "",
        params,
        async (after, limit) => {
          const values: unknown[] = [merchantId, ...(subscriptionId === null ? [] : [subscriptionId]), ...(after ? [after.createdAt, after.id] : []), limit];
          return (await pool.query<Row>({ ...(after ? variants.after : variants.first), values })).rows;
        },
        orderJson,
      );
    }
    const match = SUBSCRIPTION_PATH.exec(url.pathname);
    if (match) {
      const rows = (await pool.query<Row>({ ...GET_SUBSCRIPTION, values: [merchantId, decodeURIComponent(match[1]!)] })).rows;
      const first = rows[0];
      if (!first) throw new HttpError(404, "not_found");
      const subscription = subscriptionJson(first);
      const charges = rows.filter((row) => row.charge_id !== null).map((row) => chargeJson(row, subscription.id));
      return JSON.stringify({ ...subscription, charges });
    }
    throw new HttpError(404, "not_found");
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://floor");
    if (url.pathname === "/healthz") return send(response, 200, '{"status":"ok"}');
    const presented = createHash("sha256")
      .update(request.headers.authorization ?? "")
      .digest();
    if (!timingSafeEqual(presented, expectedKey)) return send(response, 401, '{"code":"invalid_api_key"}');
    if (request.method !== "GET") return send(response, 405, '{"code":"method_not_allowed"}');
    send(response, 200, await route(url));
  }

  return createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (error instanceof HttpError) return send(response, error.status, JSON.stringify({ code: error.code }));
      process.stderr.write(`floor: ${(error as Error).stack ?? String(error)}\n`);
      send(response, 500, '{"code":"internal"}');
    });
  });
}
