import {
  chargeListSchema,
  eventListSchema,
  getSubscriptionQuerySchema,
  listChargesQuerySchema,
  listEventsQuerySchema,
  type JsonSchema,
  listOrdersQuerySchema,
  listSubscriptionsQuerySchema,
  namedSchemas,
  orderListSchema,
  problemSchema,
  subscriptionIdPattern,
  subscriptionListSchema,
  subscriptionWithChargesSchema,
  validationProblemSchema,
} from "./schemas.ts";

/**
 * The OpenAPI 3.1 document served at /api/v1/openapi.json, built from the very schema objects the
 * routes validate their query strings with (schemas.ts). Response bodies come pre-rendered from the
 * query service; the live-response tests (test-support/openapi-validator.ts) hold them to this document.
 */

const componentNameBySchema = new Map<unknown, string>(Object.entries(namedSchemas).map(([name, schema]) => [schema, name]));

/** Deep copy in which every nested named schema becomes a $ref to its component. */
function withRefs(node: unknown, root: unknown): unknown {
  if (node !== root && componentNameBySchema.has(node)) return { $ref: `#/components/schemas/${componentNameBySchema.get(node)}` };
  if (Array.isArray(node)) return node.map((item) => withRefs(item, root));
  if (node && typeof node === "object") {
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withRefs(value, root)]));
  }
  return node;
}

const ref = (schema: JsonSchema) => withRefs(schema, undefined);

const headerRefs = {
  "Request-Id": { $ref: "#/components/headers/Request-Id" },
  "Cache-Control": { $ref: "#/components/headers/Cache-Control" },
};
const rateLimitHeaderRefs = {
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
  RateLimit: { $ref: "#/components/headers/RateLimit" },
};

function problemResponse(description: string, schema: JsonSchema, extraHeaders: Record<string, unknown> = {}) {
  return {
    description,
    headers: { ...headerRefs, ...extraHeaders },
    content: { "application/problem+json": { schema: ref(schema) } },
  };
}

function queryParameters(schema: { properties: Record<string, JsonSchema> }) {
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    in: "query",
    required: false,
    description: property.description,
    schema: Object.fromEntries(Object.entries(property).filter(([key]) => key !== "description")),
  }));
}

function readOperation(options: {
  operationId: string;
  summary: string;
  description: string;
  parameters: unknown[];
  schema: JsonSchema;
  hasId?: boolean;
  /** Further responses of this operation only (e.g. 410 on the feed). */
  extraResponses?: Record<string, ReturnType<typeof problemResponse>>;
}) {
  const get = {
    operationId: options.operationId,
    summary: options.summary,
    description: options.description,
    parameters: options.parameters,
    responses: {
      "200": {
        description: "OK",
        headers: { ...headerRefs, ...rateLimitHeaderRefs },
        content: { "application/json": { schema: ref(options.schema) } },
      },
      "400": problemResponse("A query parameter is unknown, repeated or invalid, or the cursor is invalid.", validationProblemSchema, rateLimitHeaderRefs),
      "401": problemResponse("The API key is missing, invalid, revoked or expired.", problemSchema, {
        "WWW-Authenticate": { $ref: "#/components/headers/WWW-Authenticate" },
      }),
      "404": problemResponse(
        options.hasId ? "No such subscription for this key's merchant (another merchant's id answers the same)." : "Not found.",
        problemSchema,
        rateLimitHeaderRefs,
      ),
      "429": problemResponse("The key's rate limit is exhausted.", problemSchema, {
        ...rateLimitHeaderRefs,
        "Retry-After": { $ref: "#/components/headers/Retry-After" },
      }),
      ...options.extraResponses,
      "500": problemResponse("Unexpected error.", problemSchema),
      "503": problemResponse("A dependency (including the audit log) is unavailable; no data is returned.", problemSchema, {
        "Retry-After": { $ref: "#/components/headers/Retry-After" },
      }),
    },
  };
  const head = {
    ...get,
    operationId: `${options.operationId}Head`,
    summary: `${options.summary} (headers only)`,
    responses: Object.fromEntries(
      Object.entries(get.responses).map(([status, response]) => [status, { description: response.description, headers: response.headers }]),
    ),
  };
  return { get, head };
}

export function createOpenApiDocument(): Record<string, unknown> {
  const idParameter = {
    name: "id",
    in: "path",
    required: true,
    description: "The subscription id. A malformed id answers 404 like an unknown one.",
    schema: { type: "string", pattern: subscriptionIdPattern },
  };
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "subdata API",
      version: "1.0.0",
      description:
        "Read-only access to a merchant's subscriptions, charges and orders. See docs/api.md for authentication, " +
        "pagination, money, errors, rate limits and audit. Unknown routes answer 404 and other methods on these " +
        "routes 405 (Allow: GET, HEAD), both as application/problem+json.",
    },
    servers: [{ url: "/api/v1" }],
    security: [{ apiKey: [] }],
    paths: {
      "/subscriptions": readOperation({
        operationId: "listSubscriptions",
        summary: "List subscriptions",
        description: "Keyset-paginated in (created_at, id) ascending order; a walk returns every row matching throughout exactly once.",
        parameters: queryParameters(listSubscriptionsQuerySchema),
        schema: subscriptionListSchema,
      }),
      "/subscriptions/{id}": readOperation({
        operationId: "getSubscription",
        summary: "Get a subscription with its charges",
        description: "The subscription and every charge it has, oldest first.",
        parameters: [idParameter, ...queryParameters(getSubscriptionQuerySchema)],
        schema: subscriptionWithChargesSchema,
        hasId: true,
      }),
      "/charges": readOperation({
        operationId: "listCharges",
        summary: "List charges",
        description:
          "Keyset-paginated in (created_at, id) ascending order, optionally for one subscription: the bulk read for copies " +
          "(GET /subscriptions/{id} has one subscription's charges).",
        parameters: queryParameters(listChargesQuerySchema),
        schema: chargeListSchema,
      }),
      "/events": readOperation({
        operationId: "listEvents",
        summary: "Follow the change feed",
        description:
          "Every committed change of the merchant's subscriptions, charges and orders, deletes included, in commit order: " +
          "a reader that has seen an event never later finds another placed before it. Items are byte for byte the " +
          "bodies webhooks carry. Keep a copy by taking cursor=head, walking the lists, then applying the feed from that " +
          'cursor (docs/api.md, "Keeping a copy"). With `wait`, an empty page is held open until an event arrives.',
        parameters: queryParameters(listEventsQuerySchema),
        schema: eventListSchema,
        extraResponses: {
          "410": problemResponse(
            "The cursor is older than the feed's retention (code cursor_expired): resynchronise from cursor=head.",
            problemSchema,
            rateLimitHeaderRefs,
          ),
        },
      }),
      "/orders": readOperation({
        operationId: "listOrders",
        summary: "List orders",
        description: "Keyset-paginated in (created_at, id) ascending order, optionally for one subscription.",
        parameters: queryParameters(listOrdersQuerySchema),
        schema: orderListSchema,
      }),
      "/openapi.json": {
        get: {
          operationId: "getOpenApiDocument",
          summary: "This document",
          security: [],
          responses: {
            "200": {
              description: "OK",
              headers: headerRefs,
              content: { "application/json": { schema: { type: "object" } } },
            },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "sds_ + 32 base62 + 6 base62 CRC32 checksum",
          description: "Authorization: Bearer sds_…",
        },
      },
      schemas: Object.fromEntries(Object.entries(namedSchemas).map(([name, schema]) => [name, withRefs(schema, schema)])),
      headers: {
        "Request-Id": { description: "Identifies this request (quote it to support; it is in the audit log).", schema: { type: "string" } },
        "Cache-Control": { description: "Always `private, no-store`.", schema: { type: "string", const: "private, no-store" } },
        "RateLimit-Policy": {
          description: 'The key\'s quota per gateway instance, e.g. `"default";q=100;w=1`.',
          schema: { type: "string" },
        },
        RateLimit: {
          description: 'Remaining requests and seconds until the quota is full again, e.g. `"default";r=57;t=1`.',
          schema: { type: "string" },
        },
        "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 1 } },
        "WWW-Authenticate": { description: "RFC 6750 Bearer challenge.", schema: { type: "string" } },
      },
    },
  };
}
