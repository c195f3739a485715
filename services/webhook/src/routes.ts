import type { ConnectRouter } from "@connectrpc/connect";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createDeliveryService, type DeliveryServiceDeps } from "./api/delivery-service.ts";
import { createEndpointService, type EndpointServiceDeps } from "./api/endpoint-service.ts";

export type WebhookRoutesDeps = EndpointServiceDeps & DeliveryServiceDeps;

/** The services this process serves, for grpc.health.v1. */
export const webhookServiceNames = [WebhookEndpointService.typeName, WebhookDeliveryService.typeName] as const;

/** The single registration point of the webhook service's RPCs. */
export function createWebhookRoutes(deps: WebhookRoutesDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(WebhookEndpointService, createEndpointService(deps));
    router.service(WebhookDeliveryService, createDeliveryService(deps));
  };
}
