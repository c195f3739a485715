import { Health } from "@subdata/proto/grpc/health/v1/health_pb";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { describe, expect, it } from "vitest";
import { callersOf, mayCall, RPC_ACCESS } from "./rpc-access.ts";

const services = [
  SubscriptionService,
  OrderService,
  EventService,
  ApiKeyService,
  AuditService,
  WebhookEndpointService,
  WebhookDeliveryService,
  PortalSessionService,
];

describe("the RPC access table", () => {
  it("has exactly one row per RPC of every service (a new RPC must be given its callers)", () => {
    const rpcs = services.flatMap((service) => service.methods.map((method) => `${service.typeName}/${method.name}`));
    expect(Object.keys(RPC_ACCESS).sort()).toEqual(rpcs.sort());
  });

  it("lets the gateway authenticate keys, record reads and read data, nothing else", () => {
    const gateway = Object.keys(RPC_ACCESS).filter((rpc) => mayCall("gateway", rpc));
    expect(gateway.sort()).toEqual(
      [
        "subdata.auth.v1.ApiKeyService/AuthenticateApiKey",
        "subdata.auth.v1.ApiKeyService/RecordThrottledAuthentications",
        "subdata.audit.v1.AuditService/RecordRead",
        "subdata.audit.v1.AuditService/RecordReads",
        "subdata.events.v1.EventService/ListEvents",
        "subdata.order.v1.OrderService/ListOrders",
        "subdata.subscription.v1.SubscriptionService/GetSubscription",
        "subdata.subscription.v1.SubscriptionService/ListCharges",
        "subdata.subscription.v1.SubscriptionService/ListSubscriptions",
      ].sort(),
    );
  });

  it("denies an RPC it does not list to every caller", () => {
    expect(mayCall("app", `${Health.typeName}/Check`)).toBe(false);
    expect(mayCall("gateway", "subdata.auth.v1.ApiKeyService/DeleteEverything")).toBe(false);
  });

  it("names the credentials each server holds", () => {
    expect(callersOf([SubscriptionService.typeName, OrderService.typeName, EventService.typeName])).toEqual(["gateway"]);
    expect(callersOf([ApiKeyService.typeName, AuditService.typeName])).toEqual(["gateway", "console", "app", "cli"]);
    expect(callersOf([WebhookEndpointService.typeName, WebhookDeliveryService.typeName])).toEqual(["console", "app", "cli"]);
    expect(callersOf([PortalSessionService.typeName])).toEqual(["app", "cli"]);
  });
});
