// The query service as a library: other workspaces' tests and the benchmark start it in-process.
export { queryConfigShape } from "./config.ts";
export { createQueryPool } from "./pool.ts";
export { createQueryServer } from "./server.ts";
export { createSubscriptionRepository } from "./subscription-repository.ts";
export { createOrderRepository } from "./order-repository.ts";
export { databaseEnumLabels, subscriptionStatusToDb } from "./db-enums.ts";
export { orderMessage } from "./order-message.ts";
export { chargeMessage, subscriptionMessage } from "./subscription-message.ts";
export { createChangeNotifier } from "./change-notifier.ts";
