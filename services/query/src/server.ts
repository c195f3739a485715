import {
  type ConnectObservability,
  type ConnectServer,
  createConnectServer,
  createHealthState,
  createPageTokenCodec,
  type HealthState,
  type Logger,
  type Pool,
  type CallerCredentials,
} from "@subdata/runtime";
import type { ChangeNotifier } from "./change-notifier.ts";
import { createChargeRepository } from "./charge-repository.ts";
import { createEventRepository } from "./event-repository.ts";
import { createOrderRepository } from "./order-repository.ts";
import { createQueryRoutes, queryServiceNames } from "./routes.ts";
import { createSubscriptionRepository } from "./subscription-repository.ts";

export interface QueryServerDeps {
  /** A pool of the subdata_query role, made with createQueryPool (pool.ts). */
  pool: Pool;
  /** Wakes the change feed's long polls (change-notifier.ts); the caller owns and closes it. */
  changes: ChangeNotifier;
  /** SUBDATA_<CALLER>_TOKEN_SHA256 of the callers it serves; rpc-access.ts decides which RPCs each may call. */
  callers: CallerCredentials;
  /** SUBDATA_PAGE_TOKEN_SECRET: signs page tokens. */
  pageTokenSecret: string;
  /** SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: page tokens they signed are honoured too (rotation). */
  acceptedPageTokenSecrets?: readonly string[];
  logger: Logger;
  /** The state grpc.health.v1 reports; main.ts turns it off on SIGTERM. A fresh, serving one by default. */
  health?: HealthState;
  /** Metrics registry and trace scope of the process (main.ts); tests may omit them. */
  observability?: ConnectObservability;
}

/**
 * The query service (SubscriptionService, OrderService, EventService, grpc.health.v1) over h2c, not yet listening:
 * call listen(host, port) — port 0 in tests — and close() to drain. The caller owns the pool.
 */
export function createQueryServer(deps: QueryServerDeps): ConnectServer {
  return createConnectServer({
    routes: createQueryRoutes({
      subscriptions: createSubscriptionRepository(deps.pool),
      charges: createChargeRepository(deps.pool),
      orders: createOrderRepository(deps.pool),
      events: createEventRepository(deps.pool),
      changes: deps.changes,
      pageTokens: createPageTokenCodec(deps.pageTokenSecret, deps.acceptedPageTokenSecrets),
    }),
    serviceNames: queryServiceNames,
    callers: deps.callers,
    logger: deps.logger,
    health: deps.health ?? createHealthState(),
    observability: deps.observability,
  });
}
