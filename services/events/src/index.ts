export { eventTypeName, eventTypeNames, eventTypeOf } from "./event-types.ts";
export { connectNats, eventStreamConfigShape, subscriptionEventFilter, subscriptionEventSubject } from "./event-stream.ts";
export { changeEventFromRow, renderEventBody, type ChangeEventRow, type SubscriptionSnapshot } from "./change-events.ts";
export { changeEventFromSubscriptionEvent, subscriptionEventFromChangeEvent } from "./subscription-events.ts";
