// The query service as a library: other workspaces' tests and the benchmark start it in-process.
export { loadQueryConfig, queryConfigShape, type QueryConfig } from "./config.ts";
export { createQueryPool, type QueryPoolOptions } from "./pool.ts";
export { createQueryServer, type QueryServerDeps } from "./server.ts";
export { createQueryRoutes, queryServiceNames, type QueryRoutesDeps } from "./routes.ts";
export { createSubscriptionService, type SubscriptionServiceDeps } from "./subscription-service.ts";
export { createOrderService, type OrderServiceDeps } from "./order-service.ts";
export { createSubscriptionRepository, type SubscriptionRepository } from "./subscription-repository.ts";
export { createOrderRepository, type OrderRepository } from "./order-repository.ts";
export { createChangeNotifier, type ChangeNotifier } from "./change-notifier.ts";
