import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  type NextMsgRequest,
  type SeqMsgRequest,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { eventFilter, resourceEventFilter, resourceTypes } from "@subdata/events";
import { type Logger, sleep } from "@subdata/runtime";

/**
 * The webhook service's durable pull consumer of change events (subscriptions, charges, orders: one
 * filter, `<prefix>.*.*`). Every JetStream consume call of
 * the webhook service lives in this module. JetStream is only the hand-off: a message is acked as soon
 * as its event and deliveries are committed in Postgres, where retries are scheduled, so a receiver
 * that stays down never holds messages in the consumer's ack-pending window.
 *
 * Throughput: messages are stored in batches (group commit). Whatever arrived while the previous batch
 * was being written becomes the next batch, up to `batchSize`, in one statement; a lone message is
 * written at once (no timer). Messages are acked only after their batch committed.
 *
 * Order: delivery order per (endpoint, resource) relies on version n's delivery row existing
 * before n+1's can be claimed, i.e. on events being stored in stream order. Three rules keep that:
 * - One ingester at a time. Every replica shares the durable, but only the one holding the ingest lock
 *   (a Postgres advisory lock, ingest-lock.ts) consumes; the others stand by and take over when its
 *   connection drops. Batches are written through the lock's connection, so a replica that lost the
 *   lock cannot commit anything any more.
 * - Batches are written one after another, in arrival order.
 * - Handed-back messages come back before anything newer: a failed batch naks every message in hand,
 *   and whenever consumption (re)starts — a new leader, or after a failed batch — the durable is
 *   rewound: deleted and recreated at its ack floor + 1, so every message not acked is delivered again
 *   in stream order before newer ones. (With max_ack_pending > 1 the server would otherwise hand out
 *   newer messages while the older ones wait out their nak delay or a dead replica's ack_wait.)
 *   Rewinding also cuts off pull requests still open from a replica that lost the lock. Everything at
 *   or below the ack floor was acked, hence committed; redelivered stored events are no-ops.
 * - A delivery lost in transit is handed back the same way. When the connection drops (NATS restarted,
 *   network cut) while the server hands messages out, the server counts them as delivered but they never
 *   arrive; it would redeliver them only after ack_wait, long after the newer messages a reconnected
 *   pull gets at once. Every delivery of a round carries the next consumer sequence, so a gap shows the
 *   loss: the message after the gap is not stored, and the round ends with a rewind.
 *
 * Widening the filter. A durable left by a version that consumed subscription events only
 * (`<prefix>.subscription.>`) has never taken the charge and order events the relay may have published
 * meanwhile, and some of them can sit below its ack floor. Changing filter_subject in place would not
 * bring them back: the server accepts the change (2.9 does) but goes on from the stream position it
 * reached. So the rewind, which recreates the durable anyway, starts such a durable at the first
 * message of a subject the old filter did not take, if that is below its ack floor: the subscription
 * events in between are delivered again and are no-ops (stored events are keyed by id), nothing the old
 * filter skipped is lost, and no event is delivered to an endpoint twice.
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
  /** W3C traceparent set by the relay: for logs, and stored with the event so its webhook POSTs continue the trace. */
  traceparent?: string | undefined;
}

/** What the consumer needs from the store while this replica is the ingest leader. */
export interface IngestSession {
  /** Stores the messages, in order, in one transaction; one disposition per message. Must not throw. */
  store(messages: readonly ConsumedMessage[]): Promise<MessageDisposition[]>;
  /**
   * Hands every event committed before `oldestKept` (the stream's oldest message) that has no stored
   * row back to the relay to publish again; returns how many. Used when the stream removed events this
   * consumer never stored; `streamMaxAgeMs` bounds the search when nothing is stored yet.
   */
  republishUnstored(oldestKept: Date, streamMaxAgeMs: number): Promise<number>;
  /** Aborted when the lock was lost. */
  lost: AbortSignal;
  /** True while the lock is still held (checked before pulling again). */
  confirm(): Promise<boolean>;
  release(): Promise<void>;
}

export interface EventIngester {
  /** Resolves once this replica leads ingest under `name`; undefined if `signal` aborted first. */
  lead(name: string, signal: AbortSignal): Promise<IngestSession | undefined>;
}

export interface EventConsumerOptions {
  /** SUBDATA_EVENTS_STREAM */
  stream: string;
  /** SUBDATA_EVENTS_SUBJECT_PREFIX; the consumer filters `<prefix>.*.*`. */
  subjectPrefix: string;
  /** SUBDATA_WEBHOOK_CONSUMER: the durable name, shared by every replica. */
  consumerName: string;
  ackWaitMs: number;
  /** The ingester (event-ingester.ts): takes the ingest lock and stores batches. */
  handle: EventIngester;
  /** Called with how many events were handed back to the relay after the stream lost them (main.ts counts them). */
  onRepublished?: ((count: number) => void) | undefined;
  /** Most messages stored per transaction. Default 512; max_ack_pending is twice this. */
  batchSize?: number;
  logger: Logger;
}

export interface EventConsumer {
  start(): void;
  /** Stops pulling, lets the messages in hand be stored and acked, releases the ingest lock, then resolves. */
  stop(): Promise<void>;
}

const DEFAULT_INGEST_BATCH_SIZE = 512;
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** Used only if a store throws despite its contract. */
const FALLBACK_NAK_MS = 5_000;

type RoundOutcome =
  | { kind: "stopped" | "lost" | "ended"; stored: number }
  | { kind: "failed"; stored: number; retryInMs: number }
  /** A delivery never arrived (see the module comment): rewind at once. */
  | { kind: "gap"; stored: number; expected: number; received: number };

export function createEventConsumer(nc: NatsConnection, options: EventConsumerOptions): EventConsumer {
  const { logger, stream, consumerName } = options;
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_INGEST_BATCH_SIZE);
  // Twice the batch: the next batch arrives while one is being written.
  const maxAckPending = batchSize * 2;
  const lockName = `subdata-webhook-ingest/${stream}/${consumerName}`;
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  // Set between a delete and a successful re-add, so a retry does not restart from the stream's start.
  let rewindTo: number | undefined;

  /**
   * Recreates the durable at its ack floor + 1 (see the module comment); returns that stream sequence
   * and the consumer sequence its next delivery will carry.
   */
  /**
   * The stream keeps messages for max_age: if it no longer holds the ones from `fromSeq` on, the events
   * among them this consumer never stored are still in the change feed: hand them back to the relay,
   * which publishes them again behind the stream's newest. They arrive late, after newer versions of
   * the same resource; their version says so.
   */
  async function republishIfAged(jsm: JetStreamManager, session: IngestSession, fromSeq: number): Promise<void> {
    const { state, config } = await jsm.streams.info(stream);
    if (state.first_seq <= fromSeq) return;
    // An empty stream reports a zero first_ts: everything published until now has aged out.
    const oldestKept = state.messages > 0 ? new Date(state.first_ts) : new Date();
    const handedBack = await session.republishUnstored(oldestKept, Number(config.max_age) / 1e6);
    const context = { stream, consumer: consumerName, fromSeq, firstSeq: state.first_seq, oldestKept, handedBack };
    if (handedBack === 0) {
      logger.info(context, "the stream's oldest message is past this consumer's position, and every event before it is stored");
      return;
    }
    options.onRepublished?.(handedBack);
    logger.error(
      context,
      "the stream removed events (max_age) before this consumer stored them; the outbox's rows were handed back to the relay to publish again",
    );
  }

  async function rewind(session: IngestSession): Promise<{ fromSeq: number; nextDelivery: number }> {
    const jsm = await jetstreamManager(nc);
    const filter = eventFilter(options.subjectPrefix);
    if (rewindTo === undefined) {
      try {
        const info = await jsm.consumers.info(stream, consumerName);
        // The floor stays 0 until the first ack after a rewind: then start where the last rewind did.
        const resumeAt = Math.max(info.ack_floor.stream_seq + 1, info.config.opt_start_seq ?? 1);
        const previousFilter = info.config.filter_subject ?? "";
        if (previousFilter === filter) {
          rewindTo = resumeAt;
        } else {
          const missed = await firstMessageOutside(jsm, previousFilter);
          rewindTo = Math.min(resumeAt, missed ?? resumeAt);
          logger.info({ stream, consumer: consumerName, previousFilter, filter, fromSeq: rewindTo }, "widening the event consumer's filter");
        }
        await jsm.consumers.delete(stream, consumerName);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        // A new durable starts at the stream's beginning: events published before it existed are not lost.
        rewindTo ??= 1;
      }
    }
    const startSeq = rewindTo;
    await republishIfAged(jsm, session, startSeq);
    const created = await jsm.consumers.add(stream, {
      durable_name: consumerName,
      description: "subdata webhook service: stores events and their deliveries",
      filter_subject: filter,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: startSeq,
      ack_wait: nanos(options.ackWaitMs),
      max_deliver: -1,
      max_ack_pending: maxAckPending,
    });
    rewindTo = undefined;
    return { fromSeq: startSeq, nextDelivery: created.delivered.consumer_seq + 1 };
  }

  /** The stream sequence of the first message on a resource's subjects that `previousFilter` did not take. */
  async function firstMessageOutside(jsm: JetStreamManager, previousFilter: string): Promise<number | undefined> {
    let first: number | undefined;
    for (const resourceType of resourceTypes) {
      const subjects = resourceEventFilter(options.subjectPrefix, resourceType);
      if (subjectsWithin(subjects, previousFilter)) continue;
      // STREAM.MSG.GET answers the first message at or after seq on the subjects (servers ≥ 2.9); the
      // client types this request only for direct gets, which the stream need not allow.
      const request: SeqMsgRequest & NextMsgRequest = { seq: 1, next_by_subj: subjects };
      const message = await jsm.streams.getMessage(stream, request);
      if (message && (first === undefined || message.seq < first)) first = message.seq;
    }
    return first;
  }

  function settle(m: JsMsg, disposition: MessageDisposition): void {
    if (disposition.kind === "ack") m.ack();
    else if (disposition.kind === "nak") m.nak(disposition.delayMs);
    else {
      logger.error({ subject: m.subject, seq: m.seq, reason: disposition.reason }, "poison event message terminated");
      // No reason argument: servers before 2.11 do not understand "+TERM <reason>" and leave the message pending.
      m.term();
    }
  }

  /** Consumes and stores batches until stopped, the lock is lost, a batch fails or the subscription ends. */
  async function consumeBatches(session: IngestSession, nextDelivery: number): Promise<RoundOutcome> {
    const consumer = await jetstream(nc).consumers.get(stream, consumerName);
    const messages = await consumer.consume({ max_messages: maxAckPending, abort_on_missing_resource: true });
    const interrupt = () => void messages.close().catch(() => {});
    stopping.signal.addEventListener("abort", interrupt);
    session.lost.addEventListener("abort", interrupt);
    if (stopping.signal.aborted || session.lost.aborted) interrupt();

    const inHand: JsMsg[] = [];
    let stored = 0;
    let failedRetryMs: number | undefined;
    let gap: { expected: number; received: number } | undefined;
    let expectedDelivery = nextDelivery;
    let flushing: Promise<void> | undefined;
    let flushRunning = false;

    // One flush at a time, each taking up to batchSize of what is in hand, in arrival order.
    const flush = async () => {
      try {
        // Let every message already received join the first batch.
        await new Promise<void>((resolve) => setImmediate(resolve));
        while (inHand.length > 0 && failedRetryMs === undefined && !session.lost.aborted) {
          const batch = inHand.splice(0, batchSize);
          let dispositions: MessageDisposition[];
          try {
            dispositions = await session.store(batch.map(toConsumedMessage));
          } catch (error) {
            logger.error({ err: error }, "storing an event batch threw; handing it back");
            dispositions = batch.map(() => ({ kind: "nak", delayMs: FALLBACK_NAK_MS }));
          }
          for (const [index, m] of batch.entries()) settle(m, dispositions[index] ?? { kind: "nak", delayMs: FALLBACK_NAK_MS });
          const nak = dispositions.find((d) => d.kind === "nak");
          if (nak) {
            // Nothing newer may be stored before these: stop, hand back the rest too, rewind later.
            failedRetryMs = nak.delayMs;
            interrupt();
          } else {
            stored += batch.length;
          }
        }
      } finally {
        flushRunning = false;
      }
    };

    let failure: unknown;
    try {
      for await (const m of messages) {
        if (stopping.signal.aborted || session.lost.aborted || failedRetryMs !== undefined || gap) {
          m.nak(failedRetryMs);
          continue;
        }
        const delivery = m.info.deliverySequence;
        if (delivery !== expectedDelivery) {
          // Deliveries before this one never arrived: storing this one would overtake them. What is in
          // hand came before the gap and is still stored; this and everything after go back.
          gap = { expected: expectedDelivery, received: delivery };
          m.nak();
          interrupt();
          continue;
        }
        expectedDelivery = delivery + 1;
        inHand.push(m);
        if (!flushRunning) {
          flushRunning = true;
          flushing = flush();
        }
      }
    } catch (error) {
      failure = error;
    } finally {
      stopping.signal.removeEventListener("abort", interrupt);
      session.lost.removeEventListener("abort", interrupt);
      await messages.close().catch(() => {});
      // On stop the flush drains everything in hand; after a failure or a lost lock, the rest goes back.
      await flushing;
      for (const m of inHand.splice(0)) m.nak(failedRetryMs);
      // Acks and naks reach the server before the lock can pass to another replica.
      await nc.flush().catch(() => {});
    }
    if (session.lost.aborted) return { kind: "lost", stored };
    if (stopping.signal.aborted) return { kind: "stopped", stored };
    if (failedRetryMs !== undefined) return { kind: "failed", stored, retryInMs: failedRetryMs };
    if (gap) return { kind: "gap", stored, ...gap };
    if (failure) logger.warn({ err: failure, stream }, "event consumer stopped unexpectedly; restarting");
    return { kind: "ended", stored };
  }

  /** Consumes while this replica holds the lock, rewinding before every round. */
  async function lead(session: IngestSession): Promise<void> {
    let backoffMs = MIN_BACKOFF_MS;
    let afterGap = false;
    while (!stopping.signal.aborted && !session.lost.aborted) {
      let pauseMs = backoffMs;
      try {
        if (!(await session.confirm())) return;
        const { fromSeq, nextDelivery } = await rewind(session);
        logger.info({ stream, consumer: consumerName, fromSeq }, "ingesting events");
        const outcome = await consumeBatches(session, nextDelivery);
        if (outcome.kind === "stopped" || outcome.kind === "lost") return;
        if (outcome.kind === "gap") {
          logger.warn(
            { stream, consumer: consumerName, expected: outcome.expected, received: outcome.received },
            "deliveries were lost in transit (connection dropped?); rewinding to hand them out again in order",
          );
          // Rewind at once (newer events wait behind the lost ones), unless the last round ended so too.
          const immediately = !afterGap;
          afterGap = true;
          if (immediately) continue;
        } else {
          afterGap = false;
        }
        if (outcome.stored > 0) backoffMs = MIN_BACKOFF_MS;
        pauseMs = outcome.kind === "failed" ? outcome.retryInMs : backoffMs;
      } catch (error) {
        if (stopping.signal.aborted) return;
        logger.warn({ err: error, stream }, "event consumer failed; retrying");
      }
      await sleep(pauseMs, stopping.signal);
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
    }
  }

  async function run(): Promise<void> {
    let backoffMs = MIN_BACKOFF_MS;
    while (!stopping.signal.aborted) {
      let session: IngestSession | undefined;
      try {
        session = await options.handle.lead(lockName, stopping.signal);
      } catch (error) {
        logger.warn({ err: error }, "could not take part in ingest leadership; retrying");
        await sleep(backoffMs, stopping.signal);
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        continue;
      }
      if (!session) break;
      backoffMs = MIN_BACKOFF_MS;
      try {
        if (!stopping.signal.aborted) {
          logger.info({ stream, consumer: consumerName }, "this replica leads event ingest");
          await lead(session);
        }
      } finally {
        await session.release();
      }
      if (!stopping.signal.aborted) logger.warn({ stream, consumer: consumerName }, "ingest lock lost; standing by");
    }
  }

  return {
    start() {
      if (running) return;
      running = run();
    },
    async stop() {
      stopping.abort();
      await running;
    },
  };
}

function toConsumedMessage(m: JsMsg): ConsumedMessage {
  return { data: m.data, subject: m.subject, seq: m.seq, redelivered: m.redelivered, traceparent: m.headers?.get("traceparent") };
}

/**
 * Whether every subject `subjects` (a filter ending in ">") matches is matched by `filter` too; an empty
 * filter takes the whole stream.
 */
export function subjectsWithin(subjects: string, filter: string): boolean {
  if (filter === "") return true;
  const inner = subjects.split(".");
  const outer = filter.split(".");
  for (let i = 0; i < outer.length; i++) {
    if (outer[i] === ">") return i < inner.length;
    if (i >= inner.length || inner[i] === ">") return false;
    if (outer[i] !== "*" && outer[i] !== inner[i]) return false;
  }
  return inner.length === outer.length;
}

function isNotFound(error: unknown): boolean {
  const e = error as { code?: unknown; api_error?: { err_code?: number }; name?: string; message?: string };
  return e.api_error?.err_code === 10014 || e.code === 10014 || e.name === "ConsumerNotFoundError" || /consumer not found/i.test(e.message ?? "");
}
