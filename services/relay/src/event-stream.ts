import {
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import { headers, nanos, type NatsConnection } from "@nats-io/transport-node";
import { eventSubject, type ResourceType } from "@subdata/events";

// Every JetStream call the relay makes — connecting, stream setup, publishing — lives in this module.

export interface EventStreamSettings {
  /** JetStream stream name (SUBDATA_EVENTS_STREAM). */
  stream: string;
  /** Subject prefix (SUBDATA_EVENTS_SUBJECT_PREFIX); the stream captures `<prefix>.>`. */
  subjectPrefix: string;
  /** 1 on one machine, 3 in production. */
  replicas: number;
  /** How long the stream keeps an event (SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS); 7 unless set. */
  maxAgeDays?: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Limits retention with a max_age (7 days unless configured) rather than a work queue: the webhook
 * consumer's ack does not remove a message, so replays and other consumers can read the same events.
 * discard "new" makes a full stream refuse publishes (the relay keeps rows pending and retries)
 * instead of silently dropping the oldest events. The dedupe window (2 h) is far above the relay's
 * retry horizon for a claimed-but-unmarked row (seconds); it must stay ≤ max_age.
 */
const eventStreamLimits = {
  defaultMaxAgeDays: 7,
  duplicateWindowMs: 2 * 60 * 60 * 1000,
  maxBytes: -1,
  maxMsgSize: 1024 * 1024,
} as const;

function eventStreamConfig(settings: EventStreamSettings): StreamConfig {
  return {
    name: settings.stream,
    description: "subdata change events (subscriptions, charges, orders), published by the outbox relay",
    subjects: [`${settings.subjectPrefix}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    max_age: nanos((settings.maxAgeDays ?? eventStreamLimits.defaultMaxAgeDays) * DAY_MS),
    duplicate_window: nanos(eventStreamLimits.duplicateWindowMs),
    max_bytes: eventStreamLimits.maxBytes,
    max_msg_size: eventStreamLimits.maxMsgSize,
    num_replicas: settings.replicas,
    allow_direct: true,
  } as StreamConfig;
}

/**
 * Creates the stream, or brings an existing one to the settings above (storage and retention cannot
 * change in place; a mismatch there is reported, not "fixed" by deleting the stream). Returns how long
 * the stream, as it now is, keeps an event (0: no age limit).
 */
export async function ensureEventStream(nc: NatsConnection, settings: EventStreamSettings): Promise<{ maxAgeMs: number }> {
  const jsm = await jetstreamManager(nc);
  await ensureWith(jsm, eventStreamConfig(settings));
  const { config } = await jsm.streams.info(settings.stream);
  return { maxAgeMs: Number(config.max_age) / 1_000_000 };
}

/**
 * Why the stream must keep events at least as long as the outbox keeps them published: a consumer
 * that falls further behind than max_age finds the oldest events gone from the stream, and the outbox
 * rows are what shows which ones were published. Returns the warning to log, naming the settings,
 * or undefined when the stream keeps long enough.
 */
export function streamRetentionWarning(stream: string, maxAgeMs: number, outboxRetentionDays: number): string | undefined {
  if (maxAgeMs === 0 || maxAgeMs >= outboxRetentionDays * DAY_MS) return undefined;
  return (
    `stream ${stream} keeps events ${(maxAgeMs / DAY_MS).toFixed(1)} days (max_age), less than the ${outboxRetentionDays} days of ` +
    `SUBDATA_RELAY_RETENTION_DAYS: a consumer further behind than max_age loses events; raise SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS ` +
    `or the stream's max_age`
  );
}

async function ensureWith(jsm: JetStreamManager, config: StreamConfig): Promise<void> {
  let existing: StreamConfig;
  try {
    existing = (await jsm.streams.info(config.name)).config;
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
    await jsm.streams.add(config);
    return;
  }
  if (existing.storage !== config.storage || existing.retention !== config.retention) {
    throw new Error(
      `stream ${config.name} exists with storage ${existing.storage}/retention ${existing.retention}; ` +
        `expected ${config.storage}/${config.retention} (these cannot be changed in place)`,
    );
  }
  const { name: _name, storage: _storage, retention: _retention, ...updatable } = config;
  await jsm.streams.update(config.name, updatable);
}

function isStreamNotFound(error: unknown): boolean {
  return (error as { code?: unknown }).code === 10059 || (error as Error).name === "StreamNotFoundError";
}

export interface PublishedEvent {
  /** The stream sequence, or that of the earlier copy when `duplicate`. */
  seq: number;
  /** JetStream already held a message with this id (a re-publish after a crash). */
  duplicate: boolean;
}

/** Publishes encoded events to the stream and awaits each PubAck. */
export interface EventPublisher {
  /** `traceparent` (W3C) travels as a message header so the consumer's logs join the relay's trace. */
  publish(event: { id: string; type: string; resourceType: ResourceType; merchantId: string; data: Uint8Array; traceparent?: string }): Promise<PublishedEvent>;
}

export interface EventPublisherOptions extends EventStreamSettings {
  /** How long to wait for a PubAck before the publish counts as failed. */
  ackTimeoutMs?: number;
}

/**
 * A publisher bound to the stream. Nats-Msg-Id = event id, so a re-publish within the dedupe window
 * is stored once; `expect.streamName` makes a subject captured by some other stream an error rather
 * than a silent success. If the stream vanished (no responders), the next publish recreates it first.
 */
export function createEventPublisher(nc: NatsConnection, options: EventPublisherOptions): EventPublisher {
  const js: JetStreamClient = jetstream(nc);
  let recreate: Promise<void> | undefined;
  return {
    async publish(event) {
      if (recreate) await recreate;
      const h = headers();
      h.set("Content-Type", "application/protobuf");
      h.set("Subdata-Event-Type", event.type);
      if (event.traceparent) h.set("traceparent", event.traceparent);
      try {
        const ack = await js.publish(eventSubject(options.subjectPrefix, event.resourceType, event.merchantId), event.data, {
          msgID: event.id,
          headers: h,
          expect: { streamName: options.stream },
          timeout: options.ackTimeoutMs ?? 5_000,
        });
        return { seq: ack.seq, duplicate: ack.duplicate };
      } catch (error) {
        if (isNoResponders(error) && !recreate) {
          recreate = ensureEventStream(nc, options)
            .then(() => {})
            .finally(() => {
              recreate = undefined;
            });
          recreate.catch(() => {});
        }
        throw error;
      }
    },
  };
}

function isNoResponders(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    // v3 reports a publish nobody answers (no stream captures the subject) as JetStreamNotEnabled
    // caused by NoRespondersError.
    if (e.name === "NoRespondersError" || e.name === "JetStreamNotEnabled" || /no responders/i.test(e.message)) return true;
  }
  return false;
}
