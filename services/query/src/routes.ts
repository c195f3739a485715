import type { ConnectRouter } from "@connectrpc/connect";
import type { PageTokenCodec } from "@subdata/runtime";
import { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import type { ChangeNotifier } from "./change-notifier.ts";
import type { ChargeRepository } from "./charge-repository.ts";
import type { EventRepository } from "./event-repository.ts";
import { createEventService } from "./event-service.ts";
import { createOrderService } from "./order-service.ts";
import type { OrderRepository } from "./order-repository.ts";
import { createSubscriptionService } from "./subscription-service.ts";
import type { SubscriptionRepository } from "./subscription-repository.ts";

export interface QueryRoutesDeps {
  subscriptions: SubscriptionRepository;
  charges: ChargeRepository;
  orders: OrderRepository;
  events: EventRepository;
  changes: ChangeNotifier;
  pageTokens: PageTokenCodec;
}

/** The services this process serves, for grpc.health.v1. */
export const queryServiceNames = [SubscriptionService.typeName, OrderService.typeName, EventService.typeName] as const;

/** The single registration point of the query service's RPCs. */
export function createQueryRoutes(deps: QueryRoutesDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(SubscriptionService, createSubscriptionService(deps));
    router.service(OrderService, createOrderService(deps));
    router.service(EventService, createEventService(deps));
  };
}
