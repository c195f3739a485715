// The outbox relay as a library: integration tests start it in-process.
export { createEventPublisher, ensureEventStream, type EventStreamSettings } from "./event-stream.ts";
export { createOutboxListener } from "./outbox-listener.ts";
export { createOutboxRepository, type OutboxRepository } from "./outbox-repository.ts";
export { createRelay, type PurgedTable, type Relay, type RetentionSettings } from "./relay.ts";
export { relayConfigShape } from "./config.ts";
