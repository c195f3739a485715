import { AckPolicy, type ConsumerMessages, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@subdata/runtime";

/**
 * The webhook service's durable pull consumer of subscription events. Every JetStream consume call of
 * the webhook service lives in this module. JetStream is only the hand-off: a message is acked as soon
 * as its event and deliveries are committed in Postgres, where retries are scheduled, so a receiver
 * that stays down never holds messages in the consumer's ack-pending window.
 *
 * Order: max_ack_pending = 1, so the server hands out the next message only after this one is acked,
 * to whichever replica pulls. Messages are therefore stored in stream order even with several
 * replicas and across naks (a nak'd message comes back before anything after it), and per-subscription
 * delivery order can rely on it. The price is one message per round trip (a few hundred to a thousand
 * events per second), far above the rate of subscription changes.
 */

export type MessageDisposition =
  | { kind: "ack" }
  /** Transient failure (database down): redeliver after the delay. */
  | { kind: "nak"; delayMs: number }
  /** Poison (undecodable): never redeliver. */
  | { kind: "term"; reason: string };

export interface ConsumedMessage {
  data: Uint8Array;
  subject: string;
  /** Stream sequence, for logs. */
  seq: number;
  redelivered: boolean;
  /** W3C traceparent set by the relay, for logs. */
  traceparent?: string | undefined;
}

export interface EventConsumerOptions {
  /** SUBDATA_EVENTS_STREAM */
  stream: string;
  /** SUBDATA_EVENTS_SUBJECT_PREFIX; the consumer filters `<prefix>.subscription.>`. */
  subjectPrefix: string;
  /** SUBDATA_WEBHOOK_CONSUMER: the durable name, shared by every replica. */
  consumerName: string;
  ackWaitMs: number;
  /** Must not throw: failures are dispositions. */
  handle(message: ConsumedMessage): Promise<MessageDisposition>;
  logger: Logger;
}

export interface EventConsumer {
  start(): void;
  /** Stops pulling, lets the message in hand finish (and be acked), then resolves. */
  stop(): Promise<void>;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

export function createEventConsumer(nc: NatsConnection, options: EventConsumerOptions): EventConsumer {
  const { logger } = options;
  let stopped = false;
  let running: Promise<void> | undefined;
  let messages: ConsumerMessages | undefined;
  let wakeSleep: (() => void) | undefined;

  async function ensureConsumer(): Promise<void> {
    const jsm = await jetstreamManager(nc);
    const settings = {
      filter_subject: `${options.subjectPrefix}.subscription.>`,
      ack_wait: nanos(options.ackWaitMs),
      max_deliver: -1,
      max_ack_pending: 1,
      description: "subdata webhook service: stores events and their deliveries",
    };
    try {
      await jsm.consumers.info(options.stream, options.consumerName);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      // A new durable starts at the stream's beginning: events published before it existed are not lost.
      await jsm.consumers.add(options.stream, {
        ...settings,
        durable_name: options.consumerName,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
      });
      return;
    }
    await jsm.consumers.update(options.stream, options.consumerName, settings);
  }

  async function settle(message: ConsumedMessage, ack: { ack(): void; nak(ms?: number): void; term(): void }) {
    const disposition = await options.handle(message);
    if (disposition.kind === "ack") ack.ack();
    else if (disposition.kind === "nak") ack.nak(disposition.delayMs);
    else {
      logger.error({ subject: message.subject, seq: message.seq, reason: disposition.reason }, "poison event message terminated");
      // No reason argument: servers before 2.11 do not understand "+TERM <reason>" and leave the message pending.
      ack.term();
    }
  }

  async function run(): Promise<void> {
    const js = jetstream(nc);
    let backoffMs = MIN_BACKOFF_MS;
    while (!stopped) {
      try {
        await ensureConsumer();
        const consumer = await js.consumers.get(options.stream, options.consumerName);
        messages = await consumer.consume({ max_messages: 8 });
        if (stopped) break;
        logger.info({ stream: options.stream, consumer: options.consumerName }, "consuming subscription events");
        for await (const m of messages) {
          if (stopped) {
            m.nak(); // not processed: hand it straight back instead of waiting out ack_wait
            break;
          }
          await settle({ data: m.data, subject: m.subject, seq: m.seq, redelivered: m.redelivered, traceparent: m.headers?.get("traceparent") }, m);
          backoffMs = MIN_BACKOFF_MS;
        }
      } catch (error) {
        if (!stopped) logger.warn({ err: error, stream: options.stream }, "event consumer failed; retrying");
      } finally {
        await messages?.close().catch(() => {});
        messages = undefined;
      }
      if (stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoffMs);
        wakeSleep = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeSleep = undefined;
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
    }
  }

  return {
    start() {
      if (running) return;
      running = run();
    },
    async stop() {
      stopped = true;
      wakeSleep?.();
      await messages?.close().catch(() => {});
      await running;
    },
  };
}

function isNotFound(error: unknown): boolean {
  const e = error as { code?: unknown; api_error?: { err_code?: number }; name?: string; message?: string };
  return (
    e.api_error?.err_code === 10014 ||
    e.code === 10014 ||
    e.name === "ConsumerNotFoundError" ||
    /consumer not found/i.test(e.message ?? "")
  );
}
