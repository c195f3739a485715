// The outbox relay as a library: integration tests start it in-process.
export {
  createEventPublisher,
  ensureEventStream,
  eventStreamConfig,
  eventStreamLimits,
  type EventPublisher,
  type EventStreamSettings,
} from "./event-stream.ts";
export { changedFieldPaths, outboxRowToEvent, type OutboxRow } from "./outbox-event.ts";
export { createOutboxListener, OUTBOX_CHANNEL } from "./outbox-listener.ts";
export { createOutboxRepository, type OutboxRepository } from "./outbox-repository.ts";
export { createRelay, type Relay, type RelayDeps, type RoundResult } from "./relay.ts";
export { loadRelayConfig, relayConfigShape, type RelayConfig } from "./config.ts";
