export { eventTypeName, eventTypeNames, eventTypeOf } from "./event-types.ts";
export { connectNats, eventStreamConfigShape, eventSubject, subscriptionEventFilter } from "./event-stream.ts";
export {
  changeEventFromRow,
  renderEventBody,
  type ChangeEventRow,
  type ChargeSnapshot,
  type ResourceType,
  type SubscriptionSnapshot,
} from "./change-events.ts";
export { changeEventFromSubscriptionEvent, subscriptionEventFromChangeEvent } from "./subscription-events.ts";
