import { eventTypeNames } from "@subdata/events";
import {
  chargeListSchema,
  eventListSchema,
  eventSchemaByResource,
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
 * query service, and webhook bodies from the event renderer; the live-response and live-delivery tests
 * (test-support/openapi-validator.ts) hold both to this document, and Redocly lints it (redocly.yaml).
 */

/** Tags, alphabetical: every operation and webhook has exactly one. */
const tags = [
  { name: "API description", description: "This OpenAPI document: the machine-readable contract of the REST API and of the webhooks." },
  {
    name: "Change feed",
    description: "Every committed change of subscriptions, charges and orders, in commit order: the pull twin of the webhooks.",
  },
  { name: "Charges", description: "Attempts to bill a subscription for a period, and their outcome." },
  { name: "Orders", description: "What successful charges created, with their line items." },
  { name: "Subscriptions", description: "Customers' recurring purchases of a plan." },
  {
    name: "Webhooks",
    description:
      "Signed POSTs (Standard Webhooks) that subdata sends to the endpoints a merchant registered, one per event; " +
      "docs/webhooks.md describes registration, verification, retries and ordering.",
  },
] as const;
type Tag = (typeof tags)[number]["name"];

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
  tag: Tag;
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
    tags: [options.tag],
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

/** GET and HEAD of this document: no authentication, no parameters. */
function documentOperation() {
  const get = {
    tags: ["API description"] satisfies Tag[],
    operationId: "getOpenApiDocument",
    summary: "This document",
    description: "The OpenAPI 3.1 description of the REST API and of the webhooks. Needs no API key; takes no query parameters.",
    security: [],
    responses: {
      "200": {
        description: "OK",
        headers: headerRefs,
        content: { "application/json": { schema: { type: "object", description: "An OpenAPI 3.1 document." } } },
      },
      "400": problemResponse("A query parameter was given: this document takes none.", validationProblemSchema),
      "500": problemResponse("Unexpected error.", problemSchema),
    },
  };
  const head = {
    ...get,
    operationId: "getOpenApiDocumentHead",
    summary: "This document (headers only)",
    responses: Object.fromEntries(
      Object.entries(get.responses).map(([status, response]) => [status, { description: response.description, headers: response.headers }]),
    ),
  };
  return { get, head };
}

/** Standard Webhooks headers every delivery carries, as the receiver sees them. */
const webhookHeaderParameters = [
  {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "The event id, equal to the body's `id`: the same on every retry, resend and replay. Dedupe on it.",
    schema: { type: "string", pattern: "^evt_[A-Za-z0-9]+$" },
  },
  {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix seconds when this attempt was signed; reject deliveries too far from your clock.",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description:
      "`v1,<base64 HMAC-SHA256 of id.timestamp.body>` under the endpoint's secret; during a rotation one entry per valid " +
      "secret, space-separated. Verify it with a Standard Webhooks library before trusting the body.",
    schema: { type: "string", pattern: "^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$" },
  },
  {
    name: "traceparent",
    in: "header",
    required: true,
    description: "W3C Trace Context of the change that caused the event, with a new span id per attempt. Informational: not signed.",
    schema: { type: "string", pattern: "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$" },
  },
];

const webhookSummaries: Record<string, string> = {
  created: "was created",
  updated: "changed",
  deleted: "was deleted",
};

/**
 * One event type as a webhook: its body is the resource's event schema (the feed's item, by $ref) with
 * `type` fixed; created and deleted events carry no previous attributes.
 */
function webhook(type: string) {
  const [resource = "", action = ""] = type.split(".");
  const eventSchema = eventSchemaByResource[resource];
  if (!eventSchema) throw new Error(`no event schema for ${type}`);
  const narrowing: Record<string, unknown> = { type: { type: "string", const: type } };
  if (action !== "updated") narrowing.data = { type: "object", properties: { previous_attributes: { type: "object", maxProperties: 0 } } };
  const camel = `${resource}${action.charAt(0).toUpperCase()}${action.slice(1)}`;
  return {
    post: {
      tags: ["Webhooks"] satisfies Tag[],
      operationId: `${camel}Webhook`,
      summary: `The ${resource} ${webhookSummaries[action] ?? action}`,
      description:
        `Sent for every \`${type}\` event to each enabled endpoint registered for it. The body is byte for byte the change ` +
        "feed's item for the same event; `data.object` is the resource as the REST API shows it." +
        (type === "subscription.updated" ? ' `webhooks test` sends a synthetic event of this type, marked `"test": true`.' : ""),
      security: [],
      parameters: webhookHeaderParameters,
      requestBody: {
        required: true,
        description: "The event (Standard Webhooks payload).",
        content: { "application/json": { schema: { allOf: [ref(eventSchema), { type: "object", required: Object.keys(narrowing), properties: narrowing }] } } },
      },
      responses: {
        "2XX": { description: "Acknowledged: the delivery succeeded. Answer within 15 seconds; do the work afterwards." },
        "410": { description: "Gone: subdata disables the endpoint at once and cancels its pending deliveries." },
        "429": { description: "Too many requests: retried per the schedule, honouring a Retry-After within bounds." },
        "4XX": { description: "Any other status fails this attempt (as do 3xx, timeouts and refused connections): retried per the schedule." },
        "5XX": { description: "Retried per the schedule, honouring a Retry-After within bounds." },
      },
    },
  };
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
        "routes 405 (Allow: GET, HEAD), both as application/problem+json. The `webhooks` describe the signed POSTs " +
        "subdata sends to registered endpoints, one per event type (docs/webhooks.md): receivers can generate their " +
        "types from them.",
      contact: { name: "subdata", url: "https://subdata.dev" },
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers: [{ url: "/api/v1" }],
    tags,
    security: [{ apiKey: [] }],
    paths: {
      "/subscriptions": readOperation({
        tag: "Subscriptions",
        operationId: "listSubscriptions",
        summary: "List subscriptions",
        description: "Keyset-paginated in (created_at, id) ascending order; a walk returns every row matching throughout exactly once.",
        parameters: queryParameters(listSubscriptionsQuerySchema),
        schema: subscriptionListSchema,
      }),
      "/subscriptions/{id}": readOperation({
        tag: "Subscriptions",
        operationId: "getSubscription",
        summary: "Get a subscription with its charges",
        description: "The subscription and every charge it has, oldest first.",
        parameters: [idParameter, ...queryParameters(getSubscriptionQuerySchema)],
        schema: subscriptionWithChargesSchema,
        hasId: true,
      }),
      "/charges": readOperation({
        tag: "Charges",
        operationId: "listCharges",
        summary: "List charges",
        description:
          "Keyset-paginated in (created_at, id) ascending order, optionally for one subscription: the bulk read for copies " +
          "(GET /subscriptions/{id} has one subscription's charges).",
        parameters: queryParameters(listChargesQuerySchema),
        schema: chargeListSchema,
      }),
      "/events": readOperation({
        tag: "Change feed",
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
        tag: "Orders",
        operationId: "listOrders",
        summary: "List orders",
        description: "Keyset-paginated in (created_at, id) ascending order, optionally for one subscription.",
        parameters: queryParameters(listOrdersQuerySchema),
        schema: orderListSchema,
      }),
      "/openapi.json": documentOperation(),
    },
    webhooks: Object.fromEntries(eventTypeNames.map((type) => [type, webhook(type)])),
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
