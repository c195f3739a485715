import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { AuditService, type RecordReadRequest } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService, type AuthenticateApiKeyRequest } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { type Order, OrderSchema, OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { EventService, type ListEventsRequest } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService, type ListOrdersRequest } from "@subdata/proto/subdata/order/v1/order_service_pb";
import {
  type Charge,
  ChargeSchema,
  ChargeStatus,
  PlanInterval,
  type Subscription,
  SubscriptionSchema,
  SubscriptionStatus,
} from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { type ListSubscriptionsRequest, SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import {
  ErrorReason,
  errorWithReason,
  notFound,
  PUBLIC_LIST_START,
  publicFeedEnd,
  publicListEnd,
  renderCharge,
  renderOrder,
  renderSubscription,
} from "@subdata/runtime";
import type { GatewayClients } from "../server.ts";

/**
 * In-memory upstreams for unit tests (createRouterTransport, as connectrpc/examples-es mocks
 * ElizaService): a tiny auth service with a key table, an audit log in an array, and a query service
 * answering from arrays. Tests swap any handler through `behaviour`. Asked for render_public_json (as
 * the gateway always asks), the query fakes answer with the shared renderers' JSON, which is what the
 * real query service must produce byte for byte (services/query/src/public-json.test.ts).
 */

const json = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

/**
 * A rendered page as the query service answers it: the whole list object when the edge asks for it
 * (render_public_list), the items alone otherwise or when the fake plays a query service older than
 * that field (behaviour.itemsOnly).
 */
function renderedPage(items: unknown[], request: { renderPublicList: boolean }, itemsOnly: boolean | undefined, end: string) {
  return request.renderPublicList && !itemsOnly
    ? { publicListJson: Buffer.from(`${PUBLIC_LIST_START}${JSON.stringify(items)}${end}`) }
    : { publicJson: json(items) };
}

export interface FakeKey {
  apiKeyId: string;
  merchantId: string;
  expiresAtMs?: number;
  state?: "valid" | "revoked" | "expired";
}

export interface FakeUpstreams {
  clients: GatewayClients;
  keys: Map<string, FakeKey>;
  subscriptions: Subscription[];
  charges: Charge[];
  orders: Order[];
  authCalls: AuthenticateApiKeyRequest[];
  audits: RecordReadRequest[];
  /** Reads per RecordReads call, in call order. */
  auditBatches: number[];
  listSubscriptionCalls: ListSubscriptionsRequest[];
  listOrderCalls: ListOrdersRequest[];
  listEventsCalls: ListEventsRequest[];
  behaviour: {
    /**
     * Replace the write of one read (e.g. to fail it, or to hold it), for RecordRead and for each read
     * of a RecordReads batch; a failure fails the whole batch, as the real service's INSERT does.
     */
    recordRead?: (request: RecordReadRequest) => Promise<void>;
    /** Answer RecordReads UNIMPLEMENTED, like an auth service older than the gateway. */
    recordReadsUnimplemented?: boolean;
    /** Refuse single reads of a RecordReads batch as invalid (the reason), as the real service does. */
    refuseRead?: (request: RecordReadRequest) => string | undefined;
    /** Throw this from every query RPC. */
    queryError?: ConnectError;
    /** Throw this from AuthenticateApiKey. */
    authError?: ConnectError;
    /** The next_page_token to answer lists with. */
    nextPageToken?: string;
    /** Answer typed even when asked for render_public_json, like a query service older than the gateway. */
    typedOnly?: boolean;
    /** Answers a rendered page with its items alone, as a query service older than render_public_list. */
    itemsOnly?: boolean;
  };
}

const MONEY_USD = { amountMinor: 1999n, currencyCode: "USD" };

export function fakeSubscription(init: {
  id: string;
  merchantId: string;
  status?: SubscriptionStatus;
  price?: { amountMinor: bigint; currencyCode: string };
}): Subscription {
  return create(SubscriptionSchema, {
    status: SubscriptionStatus.ACTIVE,
    customer: { id: "cus_1", email: "a@example.com", name: "A" },
    plan: { id: "plan_1", name: "Box", interval: PlanInterval.MONTH, intervalCount: 1 },
    price: MONEY_USD,
    quantity: 1,
    currentPeriodStart: timestampFromMs(Date.UTC(2026, 0, 1)),
    currentPeriodEnd: timestampFromMs(Date.UTC(2026, 1, 1)),
    createdAt: timestampFromMs(Date.UTC(2025, 11, 1, 0, 0, 0, 123)),
    updatedAt: timestampFromMs(Date.UTC(2025, 11, 1, 0, 0, 0, 123)),
    version: 1n,
    ...init,
  });
}

export function fakeCharge(init: { id: string; subscriptionId: string; currencyCode?: string; amountMinor?: bigint }): Charge {
  const currencyCode = init.currencyCode ?? "USD";
  return create(ChargeSchema, {
    id: init.id,
    subscriptionId: init.subscriptionId,
    status: ChargeStatus.SUCCEEDED,
    amount: { amountMinor: init.amountMinor ?? 1999n, currencyCode },
    amountRefunded: { amountMinor: 0n, currencyCode },
    orderId: "ord_1",
    scheduledAt: timestampFromMs(Date.UTC(2026, 0, 1)),
    processedAt: timestampFromMs(Date.UTC(2026, 0, 1, 0, 1)),
    createdAt: timestampFromMs(Date.UTC(2026, 0, 1)),
  });
}

export function fakeOrder(init: { id: string; merchantId: string; subscriptionId: string; currencyCode?: string }): Order {
  const money = (amountMinor: bigint) => ({ amountMinor, currencyCode: init.currencyCode ?? "USD" });
  return create(OrderSchema, {
    id: init.id,
    merchantId: init.merchantId,
    subscriptionId: init.subscriptionId,
    chargeId: "ch_1",
    number: 1001n,
    status: OrderStatus.PAID,
    subtotal: money(1999n),
    discount: money(0n),
    shipping: money(500n),
    tax: money(100n),
    total: money(2599n),
    lineItems: [{ sku: "BOX", title: "Box", quantity: 1, unitPrice: money(1999n), total: money(1999n) }],
    createdAt: timestampFromMs(Date.UTC(2026, 0, 1)),
    updatedAt: timestampFromMs(Date.UTC(2026, 0, 2)),
  });
}

export function createFakeUpstreams(): FakeUpstreams {
  const fake: FakeUpstreams = {
    clients: undefined as unknown as GatewayClients,
    keys: new Map(),
    subscriptions: [],
    charges: [],
    orders: [],
    authCalls: [],
    audits: [],
    auditBatches: [],
    listSubscriptionCalls: [],
    listOrderCalls: [],
    listEventsCalls: [],
    behaviour: {},
  };

  const transport = createRouterTransport(({ service }) => {
    service(ApiKeyService, {
      authenticateApiKey(request) {
        fake.authCalls.push(request);
        if (fake.behaviour.authError) throw fake.behaviour.authError;
        const key = fake.keys.get(request.key);
        if (!key) throw errorWithReason("invalid key", Code.Unauthenticated, ErrorReason.API_KEY_INVALID);
        if (key.state === "revoked") throw errorWithReason("revoked", Code.Unauthenticated, ErrorReason.API_KEY_REVOKED);
        if (key.state === "expired") throw errorWithReason("expired", Code.Unauthenticated, ErrorReason.API_KEY_EXPIRED);
        return {
          apiKeyId: key.apiKeyId,
          merchantId: key.merchantId,
          expiresAt: key.expiresAtMs === undefined ? undefined : timestampFromMs(key.expiresAtMs),
        };
      },
    });
    service(AuditService, {
      async recordRead(request) {
        if (fake.behaviour.recordRead) await fake.behaviour.recordRead(request);
        fake.audits.push(request);
        return { auditEventId: `aud_${fake.audits.length}` };
      },
      async recordReads(request) {
        if (fake.behaviour.recordReadsUnimplemented) throw new ConnectError("RecordReads is not implemented", Code.Unimplemented);
        fake.auditBatches.push(request.reads.length);
        const refusals = request.reads.map((read) => fake.behaviour.refuseRead?.(read));
        const accepted = request.reads.filter((_, i) => refusals[i] === undefined);
        await Promise.all(accepted.map((read) => fake.behaviour.recordRead?.(read)));
        fake.audits.push(...accepted);
        return {
          results: refusals.map((reason, i) =>
            reason === undefined
              ? { outcome: { case: "auditEventId" as const, value: `aud_${i}` } }
              : { outcome: { case: "invalidReason" as const, value: reason } },
          ),
        };
      },
    });
    service(SubscriptionService, {
      listSubscriptions(request) {
        fake.listSubscriptionCalls.push(request);
        if (fake.behaviour.queryError) throw fake.behaviour.queryError;
        const rows = fake.subscriptions.filter(
          (s) => s.merchantId === request.merchantId && (request.status === SubscriptionStatus.UNSPECIFIED || s.status === request.status),
        );
        const page = rows.slice(0, request.pageSize || 50);
        const nextPageToken = fake.behaviour.nextPageToken ?? "";
        if (!request.renderPublicJson || fake.behaviour.typedOnly) return { subscriptions: page, nextPageToken };
        return {
          ...renderedPage(page.map(renderSubscription), request, fake.behaviour.itemsOnly, publicListEnd(nextPageToken)),
          publicIds: page.map((s) => s.id),
          nextPageToken,
        };
      },
      getSubscription(request) {
        if (fake.behaviour.queryError) throw fake.behaviour.queryError;
        const subscription = fake.subscriptions.find((s) => s.id === request.subscriptionId && s.merchantId === request.merchantId);
        if (!subscription) throw notFound("subscription");
        const charges = fake.charges.filter((c) => c.subscriptionId === subscription.id);
        if (!request.renderPublicJson || fake.behaviour.typedOnly) return { subscription, charges };
        return { publicJson: json({ ...renderSubscription(subscription), charges: charges.map(renderCharge) }) };
      },
      listCharges(request) {
        if (fake.behaviour.queryError) throw fake.behaviour.queryError;
        const rows = fake.charges.filter((c) => request.subscriptionId === "" || c.subscriptionId === request.subscriptionId);
        const page = rows.slice(0, request.pageSize || 50);
        const nextPageToken = fake.behaviour.nextPageToken ?? "";
        if (!request.renderPublicJson || fake.behaviour.typedOnly) return { charges: page, nextPageToken };
        return {
          ...renderedPage(page.map(renderCharge), request, fake.behaviour.itemsOnly, publicListEnd(nextPageToken)),
          publicIds: page.map((c) => c.id),
          nextPageToken,
        };
      },
    });
    // The feed answers empty pages here; its behaviour is tested against the real query service.
    service(EventService, {
      listEvents(request) {
        fake.listEventsCalls.push(request);
        if (fake.behaviour.queryError) throw fake.behaviour.queryError;
        const nextPageToken = fake.behaviour.nextPageToken ?? "feed_position";
        return { ...renderedPage([], request, fake.behaviour.itemsOnly, publicFeedEnd(nextPageToken, false)), publicIds: [], nextPageToken, hasMore: false };
      },
    });
    service(OrderService, {
      listOrders(request) {
        fake.listOrderCalls.push(request);
        if (fake.behaviour.queryError) throw fake.behaviour.queryError;
        const rows = fake.orders.filter(
          (o) => o.merchantId === request.merchantId && (request.subscriptionId === "" || o.subscriptionId === request.subscriptionId),
        );
        const page = rows.slice(0, request.pageSize || 50);
        const nextPageToken = fake.behaviour.nextPageToken ?? "";
        if (!request.renderPublicJson || fake.behaviour.typedOnly) return { orders: page, nextPageToken };
        return {
          ...renderedPage(page.map(renderOrder), request, fake.behaviour.itemsOnly, publicListEnd(nextPageToken)),
          publicIds: page.map((o) => o.id),
          nextPageToken,
        };
      },
    });
  });

  fake.clients = {
    subscriptions: createClient(SubscriptionService, transport),
    orders: createClient(OrderService, transport),
    events: createClient(EventService, transport),
    waitingEvents: createClient(EventService, transport),
    apiKeys: createClient(ApiKeyService, transport),
    audit: createClient(AuditService, transport),
  };
  return fake;
}

export { ConnectError };
