// The outbox relay's public surface, for tests, the local launcher and the webhook side.
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
export { createOutboxRepository, type OutboxRepository, type OutboxRepositoryOptions } from "./outbox-repository.ts";
export { createRelay, type Relay, type RelayDeps, type RoundResult } from "./relay.ts";
export { loadRelayConfig, relayConfigShape, type RelayConfig } from "./relay-config.ts";
