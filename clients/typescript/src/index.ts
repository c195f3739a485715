// @subdata/client: the typed client of the subdata REST API (README.md).
export {
  apiBaseUrl,
  createSubdataClient,
  DEFAULT_FOLLOW_WAIT_SECONDS,
  type Charge,
  type ChargeEvent,
  type Event,
  type EventPage,
  type EventType,
  type Follow,
  type FollowOptions,
  type LineItem,
  type ListChargesParams,
  type ListEventsParams,
  type ListName,
  type ListOrdersParams,
  type Lists,
  type ListSubscriptionsParams,
  type Money,
  type Order,
  type OrderEvent,
  type Page,
  type RequestOptions,
  type SubdataClient,
  type SubdataClientOptions,
  type Subscription,
  type SubscriptionEvent,
  type SubscriptionWithCharges,
  type WalkOptions,
} from "./client.ts";
export { CursorExpiredError, SubdataApiError, SubdataConnectionError, type Problem } from "./errors.ts";
export { backoffDelayMs, DEFAULT_RETRY_POLICY, parseRetryAfterMs, rateLimitPauseMs, systemTimers, type FetchFunction, type RetryPolicy, type Timers } from "./retry.ts";
export type { components, operations, paths } from "./generated/schema.ts";
