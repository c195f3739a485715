import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { parseTraceParent } from "@opentelemetry/core";
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import type { Logger, Pool, Tracing } from "@subdata/runtime";
import { changeEventsByIds, type IngestedEvent, ingestEventsFenced, republishUnstoredEvents } from "./ingest-repository.ts";
import { storedTraceparent } from "../delivery/delivery-trace.ts";
import { type RenderedEvent, renderMessage } from "./event-message.ts";
import type { ConsumedMessage, EventIngester, IngestSession, MessageDisposition } from "./event-consumer.ts";
import { createIngestLease, type HeldLease } from "./ingest-lease.ts";
import { checkProvenance, type RefusalReason } from "./event-provenance.ts";

/** The ingest lease's TTL: a frozen or cut-off leader is replaced within about this plus a standby's retry. */
const DEFAULT_INGEST_LEASE_TTL_MS = 15_000;

/**
 * Turns consumed messages into stored rows: decode, check each event against the change_events row
 * it claims to be (event-provenance.ts), and store a whole batch of events and their deliveries in one
 * statement, fenced by the ingest lease (ingest-lease.ts): a batch is written only by the lease's current
 * holder, and a leader that lost it leaves its batch to the new leader. An undecodable event
 * is poison (terminated on its own, logged) and does not fail its batch; a forged or altered one is
 * acked and dropped (counted, logged by id and reason, never delivered): redelivering it would change
 * nothing. A failure to read or store the batch is treated as transient (every message of it is handed
 * back and comes again, in order), since losing an event is worse than waiting.
 */
/** Outbox rows handed back per statement when the stream lost events (row locks held for one batch only). */
const REPUBLISH_BATCH = 5_000;

export function createEventIngester(deps: {
  pool: Pool;
  logger: Logger;
  storeRetryMs: number;
  /** Called once per stored batch that created deliveries (with their endpoints), to start them without waiting for a poll. */
  onDeliveries: (endpointIds: readonly string[]) => void;
  /** How often a standby replica tries to take over the ingest lease. Default 1 s. */
  lockRetryMs?: number;
  /** The ingest lease's TTL (SUBDATA_WEBHOOK_INGEST_LEASE_MS). Default 15 s. */
  leaseTtlMs?: number;
  /** Each stored (or handed back) event that carries the relay's trace is a CONSUMER span in it, when spans are exported. */
  tracing: Tracing;
  /** Called once per refused message: undecodable, or not matching its change_events row (main.ts counts them). */
  onRefused?: ((reason: RefusalReason) => void) | undefined;
}): EventIngester {
  const lease = createIngestLease({
    pool: deps.pool,
    logger: deps.logger,
    retryMs: deps.lockRetryMs ?? 1_000,
    ttlMs: deps.leaseTtlMs ?? DEFAULT_INGEST_LEASE_TTL_MS,
  });
  return {
    async lead(name, signal): Promise<IngestSession | undefined> {
      const held = await lease.acquire(name, signal);
      if (!held) return undefined;
      return {
        store: (messages) => storeBatch(held, messages),
        async republishUnstored(oldestKept, streamMaxAgeMs) {
          let total = 0;
          for (;;) {
            const handedBack = await republishUnstoredEvents(held.client, oldestKept, streamMaxAgeMs, REPUBLISH_BATCH);
            total += handedBack;
            if (handedBack < REPUBLISH_BATCH) return total;
          }
        },
        lost: held.lost,
        confirm: held.confirm,
        release: held.release,
      };
    },
  };

  async function storeBatch(held: HeldLease, messages: readonly ConsumedMessage[]): Promise<MessageDisposition[]> {
    const { client } = held;
    // Past the lease's deadline nothing is read or written: the batch is the next leader's.
    if (!held.fence()) return messages.map(() => ({ kind: "abandon" }));
    const dispositions: MessageDisposition[] = new Array(messages.length);
    const decoded: { index: number; event: RenderedEvent }[] = [];
    messages.forEach((message, index) => {
      try {
        decoded.push({ index, event: renderMessage(message.subject, message.data) });
      } catch (error) {
        deps.onRefused?.("undecodable");
        dispositions[index] = { kind: "term", reason: `undecodable event: ${(error as Error).message}`.slice(0, 200) };
      }
    });
    if (decoded.length === 0) return dispositions;
    let recorded: Awaited<ReturnType<typeof changeEventsByIds>>;
    try {
      recorded = await changeEventsByIds(client, [...new Set(decoded.map(({ event }) => event.id))]);
    } catch (error) {
      deps.logger.warn(
        { err: error, firstSeq: messages[decoded[0]!.index]!.seq },
        "could not read the events' change_events rows; the batch will be redelivered in order",
      );
      for (const { index } of decoded) dispositions[index] = { kind: "nak", delayMs: deps.storeRetryMs };
      return dispositions;
    }

    const events: IngestedEvent[] = [];
    const stored: number[] = [];
    /** The event id of each accepted message, by its index in `messages`. */
    const eventIds: string[] = new Array(messages.length);
    const seen = new Set<string>();
    for (const { index, event: claimed } of decoded) {
      const message = messages[index]!;
      const provenance = checkProvenance(message.subject, claimed, recorded.get(claimed.id));
      if (!provenance.genuine) {
        deps.onRefused?.(provenance.reason);
        // Ids, subject and reason only: the body may hold a customer's e-mail and name.
        deps.logger.warn(
          { subject: message.subject, seq: message.seq, eventId: claimed.id, merchantId: claimed.merchantId, reason: provenance.reason },
          "refused an event that does not match its change_events row; dropped, not delivered",
        );
        dispositions[index] = { kind: "ack" };
        continue;
      }
      const event = provenance.event;
      stored.push(index);
      eventIds[index] = event.id;
      // A message redelivered while its first copy waits in the same batch is stored once.
      if (seen.has(event.id)) continue;
      seen.add(event.id);
      // The relay's trace, kept so each POST of this event continues it (delivery-trace.ts).
      events.push({ ...event, traceparent: storedTraceparent(message.traceparent) });
    }
    if (stored.length === 0) return dispositions;
    const first = messages[stored[0]!]!;
    const last = messages[stored[stored.length - 1]!]!;
    const range = { firstSeq: first.seq, lastSeq: last.seq, events: events.length };
    const startMs = performance.timeOrigin + performance.now();
    const exportSpans = (error?: unknown) => recordIngestSpans(deps.tracing, messages, eventIds, stored, { startMs, error });
    const taken = held.fence();
    if (!taken) return messages.map(() => ({ kind: "abandon" }));
    try {
      const { renewed, created, endpointIds } = await ingestEventsFenced(client, events, taken.fence);
      held.written(taken.takenAt, renewed);
      if (!renewed) {
        // Superseded: another replica leads now and will consume these again from its rewind.
        exportSpans(new Error("ingest lease lost"));
        return messages.map(() => ({ kind: "abandon" }));
      }
      if (created > 0) deps.onDeliveries(endpointIds);
      deps.logger.debug({ ...range, deliveries: created }, "event batch stored");
      for (const index of stored) dispositions[index] = { kind: "ack" };
      exportSpans();
    } catch (error) {
      exportSpans(error);
      // The relay's trace ids join these log lines to the relay's.
      const traceIds = stored
        .slice(0, 10)
        .map((index) => parseTraceParent(messages[index]!.traceparent ?? "")?.traceId)
        .filter(Boolean);
      deps.logger.warn({ err: error, ...range, traceIds }, "could not store event batch; it will be redelivered in order");
      for (const index of stored) dispositions[index] = { kind: "nak", delayMs: deps.storeRetryMs };
    }
    return dispositions;
  }
}

/**
 * One CONSUMER span per consumed message that carries the relay's trace (OTel messaging "process"), a
 * child of the relay's publish span and a sibling of the event's delivery attempts; the publish's
 * sampling decision holds (parent-based). Timed over its batch's store (spans of one batch share it);
 * the gap after the publish span is the wait in the stream. Made only when spans are exported.
 */
export function recordIngestSpans(
  tracing: Tracing,
  messages: readonly ConsumedMessage[],
  /** The event id of each decoded message, by its index in `messages`. */
  eventIds: readonly string[],
  /** Indexes of the decoded messages, in batch order. */
  stored: readonly number[],
  /** When the store began (epoch ms); it ends now. `error` when it failed. */
  store: { startMs: number; error?: unknown },
): void {
  // Nothing reads these spans' ids (the attempts carry the publish's trace), so unexported they are pure cost.
  if (!tracing.exporting) return;
  const { startMs, error } = store;
  const seen = new Set<string>();
  for (const index of stored) {
    const eventId = eventIds[index]!;
    const duplicate = seen.has(eventId);
    seen.add(eventId);
    const message = messages[index]!;
    if (!message.traceparent) continue;
    const parent = tracing.extract({ get: (name) => (name === "traceparent" ? message.traceparent : undefined) });
    const span = tracing.tracer.startSpan(
      // The subject's template, as the relay names its publish (one name for every merchant).
      `process ${message.subject.replace(/[^.]+$/, "{merchant_id}")}`,
      {
        kind: SpanKind.CONSUMER,
        startTime: startMs,
        attributes: {
          "messaging.system": "nats",
          "messaging.operation.name": "ingest",
          "messaging.operation.type": "process",
          "messaging.destination.name": message.subject,
          "messaging.message.id": eventId,
          "messaging.batch.message_count": stored.length,
          // A copy redelivered while its first waited in the same batch: stored once, with the first.
          ...(duplicate ? { "subdata.duplicate": true } : {}),
          "subdata.stream_seq": message.seq,
          "subdata.redelivered": message.redelivered,
        },
      },
      parent,
    );
    if (error !== undefined) {
      span.setAttribute(ATTR_ERROR_TYPE, (error as { code?: string }).code ?? (error as Error).name ?? "Error");
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}
