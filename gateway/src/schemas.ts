import { eventTypeNames } from "@subdata/events";
import { problemCatalogue } from "./problem.ts";

/**
 * Every JSON Schema of the public API, defined once: Fastify compiles the query strings' for
 * validation, and openapi.ts publishes all of them as components (nested schemas become $refs by
 * identity). Response bodies are rendered by the query service (render_public_json), not serialised
 * through these schemas; the live-response tests validate them against this document. Dialect: JSON
 * Schema 2020-12 (OpenAPI 3.1).
 */

export type JsonSchema = Record<string, unknown>;

const subscriptionStatuses = ["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"] as const;
const chargeStatuses = ["PENDING", "SUCCEEDED", "FAILED", "SKIPPED", "REFUNDED", "PARTIALLY_REFUNDED"] as const;
const orderStatuses = ["PAID", "FULFILLED", "CANCELLED", "REFUNDED"] as const;
const planIntervals = ["DAY", "WEEK", "MONTH", "YEAR"] as const;

/** Ids the gateway accepts before asking upstream; the query service makes nothing else. */
export const subscriptionIdPattern = "^sub_[A-Za-z0-9]{1,64}$";
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

const time = { type: ["string", "null"], format: "date-time", description: "RFC 3339 UTC with milliseconds." };
const requiredTime = { type: "string", format: "date-time", description: "RFC 3339 UTC with milliseconds." };
const nullableString = { type: ["string", "null"] };

function object(properties: Record<string, JsonSchema>, description?: string): JsonSchema {
  return {
    type: "object",
    ...(description ? { description } : {}),
    required: Object.keys(properties),
    additionalProperties: false,
    properties,
  };
}

const moneySchema = object(
  {
    amount: {
      type: "string",
      pattern: "^-?[0-9]+(\\.[0-9]+)?$",
      description: "Decimal string with exactly the ISO 4217 number of minor digits of the currency.",
      examples: ["19.99", "1500", "1.250"],
    },
    currency: { type: "string", pattern: "^[A-Z]{3}$", description: "ISO 4217 alphabetic code." },
  },
  "An amount of money; never a float, never without its currency.",
);

const customerSchema = object({ id: { type: "string" }, email: { type: "string" }, name: { type: "string" } });

const planSchema = object({
  id: { type: "string" },
  name: { type: "string" },
  interval: { type: "string", enum: [...planIntervals] },
  interval_count: { type: "integer" },
});

const subscriptionProperties: Record<string, JsonSchema> = {
  id: { type: "string", examples: ["sub_3f0c…"] },
  object: { const: "subscription", type: "string" },
  status: { type: "string", enum: [...subscriptionStatuses] },
  customer: customerSchema,
  plan: planSchema,
  price: moneySchema,
  quantity: { type: "integer" },
  current_period_start: time,
  current_period_end: time,
  next_charge_at: time,
  trial_ends_at: time,
  paused_at: time,
  cancelled_at: time,
  cancellation_reason: nullableString,
  created_at: requiredTime,
  updated_at: requiredTime,
  version: { type: "integer", description: "Increases by one on every change; webhooks carry it as their sequence." },
};

const subscriptionSchema = object(subscriptionProperties, "A customer's recurring purchase of a plan.");

const chargeSchema = object(
  {
    id: { type: "string" },
    object: { const: "charge", type: "string" },
    subscription_id: { type: "string" },
    status: { type: "string", enum: [...chargeStatuses] },
    amount: moneySchema,
    amount_refunded: moneySchema,
    order_id: nullableString,
    failure_code: nullableString,
    failure_message: nullableString,
    scheduled_at: time,
    processed_at: time,
    created_at: requiredTime,
    version: { type: "integer", description: "Increases by one on every change of the charge." },
  },
  "One attempt to bill a subscription for a period.",
);

export const subscriptionWithChargesSchema = object(
  { ...subscriptionProperties, charges: { type: "array", items: chargeSchema, description: "Every charge, oldest first." } },
  "A subscription with every charge it has, oldest first.",
);

const lineItemSchema = object({
  sku: { type: "string" },
  title: { type: "string" },
  quantity: { type: "integer" },
  unit_price: moneySchema,
  total: moneySchema,
});

const orderSchema = object(
  {
    id: { type: "string" },
    object: { const: "order", type: "string" },
    subscription_id: { type: "string" },
    charge_id: nullableString,
    number: { type: "integer" },
    status: { type: "string", enum: [...orderStatuses] },
    subtotal: moneySchema,
    discount: moneySchema,
    shipping: moneySchema,
    tax: moneySchema,
    total: moneySchema,
    line_items: { type: "array", items: lineItemSchema },
    created_at: requiredTime,
    updated_at: requiredTime,
    version: { type: "integer", description: "Increases by one on every change of the order or its line items." },
  },
  "What a successful subscription charge created.",
);

function listOf(item: JsonSchema, description: string): JsonSchema {
  return object(
    {
      object: { const: "list", type: "string" },
      data: { type: "array", items: item },
      has_more: { type: "boolean", description: "True exactly when next_cursor is not null." },
      next_cursor: { type: ["string", "null"], description: "Pass as `cursor` to read the next page; null on the last page." },
    },
    description,
  );
}

export const subscriptionListSchema = listOf(subscriptionSchema, "One page of subscriptions, (created_at, id) ascending.");
export const orderListSchema = listOf(orderSchema, "One page of orders, (created_at, id) ascending.");
export const chargeListSchema = listOf(chargeSchema, "One page of charges, (created_at, id) ascending.");

const eventTypesOf = (resource: string) => eventTypeNames.filter((name) => name.startsWith(`${resource}.`));
const resourceEventTypes = {
  subscription: eventTypesOf("subscription"),
  charge: eventTypesOf("charge"),
  order: eventTypesOf("order"),
};

/** What an update's previous_attributes may hold: any attribute of the object but its identity and version, in the object's form. */
function previousAttributesOf(objectSchema: JsonSchema, resource: string): JsonSchema {
  const { id: _id, object: _object, version: _version, ...attributes } = objectSchema.properties as Record<string, JsonSchema>;
  return {
    type: "object",
    description: `For ${resource}.updated: the value before the change of each attribute that changed, in the form data.object uses; otherwise empty.`,
    additionalProperties: false,
    properties: attributes,
  };
}

function eventOf(
  resource: keyof typeof resourceEventTypes,
  objectSchema: JsonSchema,
  description: string,
  optional: Record<string, JsonSchema> = {},
): JsonSchema {
  const event = object(
    {
      id: { type: "string", description: "evt_…: the same id as the webhook-id of every delivery of this event." },
      type: { type: "string", enum: [...resourceEventTypes[resource]] },
      timestamp: { ...requiredTime, description: "When the change was made (RFC 3339 UTC with milliseconds)." },
      data: object(
        {
          // The named schema itself, so the document says $ref and generated clients share one type.
          object: objectSchema,
          previous_attributes: previousAttributesOf(objectSchema, resource),
        },
        `The ${resource} after the change (for deletes, its last state) and what an update changed.`,
      ),
    },
    description,
  );
  return { ...event, properties: { ...(event.properties as Record<string, JsonSchema>), ...optional } };
}

const subscriptionEventSchema = eventOf("subscription", subscriptionSchema, "A subscription was created, changed or deleted.", {
  test: {
    type: "boolean",
    const: true,
    description: "Present, and true, only on the synthetic event `webhooks test` sends; real events and the change feed never carry it.",
  },
});
const chargeEventSchema = eventOf("charge", chargeSchema, "A charge was created, changed or deleted.");
const orderEventSchema = eventOf("order", orderSchema, "An order (with its line items) was created, changed or deleted.");

/** The event schema of each resource, for the document's webhooks. */
export const eventSchemaByResource: Record<string, JsonSchema> = {
  subscription: subscriptionEventSchema,
  charge: chargeEventSchema,
  order: orderEventSchema,
};

const eventSchema: JsonSchema = {
  description: "One committed change: byte for byte the body a webhook carries for the same event.",
  oneOf: [subscriptionEventSchema, chargeEventSchema, orderEventSchema],
};

export const eventListSchema = object(
  {
    object: { const: "list", type: "string" },
    data: { type: "array", items: eventSchema, description: "Events in commit order, oldest first." },
    has_more: { type: "boolean", description: "True when more events follow next_cursor right now." },
    next_cursor: {
      type: "string",
      description: "Where to continue from: never null, also after an empty page. Pass it as `cursor`, with the same `types`.",
    },
  },
  "One page of the change feed.",
);

const paramErrorSchema = object({
  param: { type: "string", description: "The public parameter name." },
  code: {
    type: "string",
    enum: ["unknown_parameter", "repeated_parameter", "invalid_value", "out_of_range", "invalid_format", "missing"],
  },
});

const problemProperties: Record<string, JsonSchema> = {
  type: { type: "string", format: "uri" },
  title: { type: "string" },
  status: { type: "integer" },
  detail: { type: "string" },
  instance: { type: "string", format: "uri-reference" },
  code: { type: "string", enum: Object.keys(problemCatalogue) },
  request_id: { type: "string" },
};

export const problemSchema = object(problemProperties, "RFC 9457 problem details.");
export const validationProblemSchema = object(
  { ...problemProperties, errors: { type: "array", items: paramErrorSchema } },
  "RFC 9457 problem details for a 400, naming each bad parameter.",
);

// Query strings. Values arrive as strings; list-params.ts turns strict decimal integers into numbers
// before validation (Ajv's own coercion would accept "1e2" or " 5").
const limit = { type: "integer", minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: "Page size." };
const cursor = {
  type: "string",
  minLength: 1,
  maxLength: 2048,
  description: "The next_cursor of the previous page; opaque, bound to the list, the filters and the merchant.",
};

export const listSubscriptionsQuerySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit,
    cursor,
    status: { type: "string", enum: [...subscriptionStatuses], description: "Only subscriptions in this status." },
  },
} satisfies JsonSchema;

export const listOrdersQuerySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit,
    cursor,
    subscription_id: { type: "string", pattern: subscriptionIdPattern, description: "Only orders of this subscription." },
  },
} satisfies JsonSchema;

export const listChargesQuerySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit,
    cursor,
    subscription_id: { type: "string", pattern: subscriptionIdPattern, description: "Only charges of this subscription." },
  },
} satisfies JsonSchema;

const DEFAULT_EVENT_LIMIT = 100;
const MAX_EVENT_LIMIT = 1000;
const MAX_EVENT_WAIT_SECONDS = 30;

const eventTypeAlternatives = eventTypeNames.map((name) => name.replace(".", "\\.")).join("|");

export const listEventsQuerySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: { type: "integer", minimum: 1, maximum: MAX_EVENT_LIMIT, default: DEFAULT_EVENT_LIMIT, description: "Page size." },
    cursor: {
      type: "string",
      minLength: 1,
      maxLength: 2048,
      description:
        "The next_cursor of the previous page (with the same `types`), or `head` for an empty page whose next_cursor is the " +
        "current end of the feed. Without a cursor the feed starts at its oldest retained event.",
    },
    types: {
      type: "string",
      pattern: `^(${eventTypeAlternatives})(,(${eventTypeAlternatives}))*$`,
      description: "Comma-separated event types to return (e.g. `subscription.updated,order.created`); all when absent.",
    },
    wait: {
      type: "integer",
      minimum: 0,
      maximum: MAX_EVENT_WAIT_SECONDS,
      default: 0,
      description: "Seconds to hold an empty page open until an event arrives (long poll).",
    },
  },
} satisfies JsonSchema;

export const getSubscriptionQuerySchema = { type: "object", additionalProperties: false, properties: {} } satisfies JsonSchema;

/** GET /openapi.json takes no parameters either; like every route, it refuses unknown ones. */
export const openApiDocumentQuerySchema = { type: "object", additionalProperties: false, properties: {} } satisfies JsonSchema;

/** Named components of the OpenAPI document, by identity. */
export const namedSchemas: Record<string, JsonSchema> = {
  Money: moneySchema,
  Customer: customerSchema,
  Plan: planSchema,
  Subscription: subscriptionSchema,
  Charge: chargeSchema,
  SubscriptionWithCharges: subscriptionWithChargesSchema,
  LineItem: lineItemSchema,
  Order: orderSchema,
  SubscriptionList: subscriptionListSchema,
  OrderList: orderListSchema,
  ChargeList: chargeListSchema,
  SubscriptionEvent: subscriptionEventSchema,
  ChargeEvent: chargeEventSchema,
  OrderEvent: orderEventSchema,
  Event: eventSchema,
  EventList: eventListSchema,
  ParamError: paramErrorSchema,
  Problem: problemSchema,
  ValidationProblem: validationProblemSchema,
};
