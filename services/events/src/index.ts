export { eventTypeName, eventTypeNames, eventTypeOf } from "./event-types.ts";
export { connectNats, eventFilter, eventStreamConfigShape, eventSubject, resourceEventFilter, resourceTypeOfSubject } from "./event-stream.ts";
export {
  changeEventFromRow,
  renderEventBody,
  resourceTypes,
  type ChangeEventRow,
  type ChargeSnapshot,
  type ResourceType,
  type SubscriptionSnapshot,
} from "./change-events.ts";
export { changeEventFromSubscriptionEvent, subscriptionEventFromChangeEvent } from "./subscription-events.ts";
export {
  apiKeyRevokedSubject,
  defaultNatsUser,
  natsAuthorizationConfig,
  natsInboxPrefix,
  natsRoles,
  type NatsPermissionSettings,
  type NatsRole,
  type NatsUsers,
} from "./nats-permissions.ts";
export {
  commitWatchStatements,
  createCommitWatchPool,
  createCommitWatcher,
  type CommitWatcherOptions,
} from "./commit-watcher.ts";
