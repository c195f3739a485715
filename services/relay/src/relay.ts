import { eventSubject } from "@subdata/events";
import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import { createBackoff, type Logger, sleep, type Tracing } from "@subdata/runtime";
import type { EventPublisher, PublishedEvent } from "./event-stream.ts";
import { outboxMessage, type OutboxRow } from "./outbox-event.ts";
import type { BatchOutcome, OutboxRepository } from "./outbox-repository.ts";

export interface RelayDeps {
  repository: OutboxRepository;
  publisher: EventPublisher;
  logger: Logger;
  /** Rows per claim, and so the most publishes in flight per round. */
  batchSize: number;
  /**
   * Rounds in flight at once (default 1). With 2, one round claims and marks in Postgres while another
   * waits for PubAcks. The rounds claim disjoint rows (SKIP LOCKED) and a round keeps a row only if
   * no earlier pending row of its resource is held by the other, exactly as two relays would.
   */
  rounds?: number;
  /** Fallback poll when no notification arrives. */
  pollIntervalMs: number;
  /** What the purge removes, and how often it runs; unset: no purge. */
  retention?: RetentionSettings;
  /** Called after every round that reached Postgres (metrics). */
  onRound?: (round: RoundResult) => void;
  /** Called after every purge batch with what it removed (metrics). */
  onPurge?: (table: PurgedTable, count: number) => void;
  /**
   * Each publish is a PRODUCER span, the root of its event's trace: the message's traceparent names
   * it, so ingest and every delivery attempt are its children. `subjectPrefix` names the subject in
   * its attributes.
   */
  tracing: RelayTracing;
}

export interface RetentionSettings {
  /** Published outbox rows older than this many days go. */
  outboxDays: number;
  /** The change feed's commits (with their events) older than this many days go; at least 30. */
  feedDays: number;
  /** Pause between two purges. */
  everyMs: number;
  /** Outbox rows per purge statement (default 10,000). */
  outboxBatch?: number;
  /** Feed commits per purge statement (default 1,000). */
  feedBatch?: number;
}

/** What a purge batch removed: published outbox rows, or the feed's commits with their events. */
export type PurgedTable = "event_outbox" | "change_commits";

export interface PurgeResult {
  outboxRows: number;
  feedCommits: number;
}

export interface RelayTracing {
  tracing: Tracing;
  subjectPrefix: string;
}

export interface RoundResult {
  claimed: number;
  published: number;
  /** Publishes that failed (NATS down, stream full…): worth a backoff. */
  failed: number;
  /** Rows that cannot be converted (a bug): retried every round, logged, no backoff. */
  unconvertible: number;
}

export interface Relay {
  /** Starts the claim → publish → mark loop in the background. */
  start(): void;
  /** Something was committed to the outbox (the commit watch, or a hand-back's NOTIFY): look now rather than at the next poll. */
  wake(): void;
  /** One claim/publish/mark round; the loop calls it, tests may too. Throws if the database fails. */
  runOnce(): Promise<RoundResult>;
  /**
   * One purge: statements of a batch each, repeated until one removes less than a batch, so a purge
   * keeps up with any rate of events. The loop runs it every `retention.everyMs`; tests may too.
   * Throws if the database fails.
   */
  purge(): Promise<PurgeResult>;
  /** Stops claiming, lets the in-flight batch finish (publish, mark, commit), then resolves. */
  stop(): Promise<void>;
  /** Whether the last round reached Postgres and NATS without trouble (for readiness). */
  readonly healthy: boolean;
}

/** Publishes one batch: a resource's rows one after another in seq order, resources in parallel. */
interface PublishOutcome extends BatchOutcome {
  failures: Array<{ id: string; error: string; transient: boolean }>;
}

/**
 * The span of one publish; the outbox row has no trace of its own (a trigger writes it), so each
 * event starts one. Named after the subject's template (OTel messaging conventions: the merchant id
 * in the subject would make one span name per merchant).
 */
function startPublishSpan(tracing: RelayTracing, row: OutboxRow): Span {
  const template = eventSubject(tracing.subjectPrefix, row.resource_type, "{merchant_id}");
  return tracing.tracing.tracer.startSpan(`publish ${template}`, {
    kind: SpanKind.PRODUCER,
    root: true,
    attributes: {
      "messaging.system": "nats",
      "messaging.operation.name": "publish",
      "messaging.operation.type": "send",
      "messaging.destination.name": eventSubject(tracing.subjectPrefix, row.resource_type, row.merchant_id),
      "messaging.destination.template": template,
      "messaging.message.id": row.id,
      "subdata.merchant_id": row.merchant_id,
      "subdata.resource_id": row.resource_id,
      "subdata.event_type": row.event_type,
    },
  });
}

async function publishBatch(rows: readonly OutboxRow[], publisher: EventPublisher, logger: Logger, tracing: RelayTracing): Promise<PublishOutcome> {
  const chains = new Map<string, OutboxRow[]>();
  for (const row of rows) {
    const chain = chains.get(row.resource_id);
    if (chain) chain.push(row);
    else chains.set(row.resource_id, [row]);
  }
  const publishedIds: string[] = [];
  const failures: PublishOutcome["failures"] = [];
  await Promise.all(
    [...chains.values()].map(async (chain) => {
      for (const row of chain) {
        let data: Uint8Array;
        try {
          data = outboxMessage(row);
        } catch (error) {
          // A row the relay cannot represent is a bug to fix, not an outage: it blocks only its own
          // resource (order forbids skipping it) and does not slow the relay down.
          logger.error({ err: error, eventId: row.id }, "outbox row cannot be converted to an event");
          failures.push({ id: row.id, error: `unconvertible: ${(error as Error).message}`, transient: false });
          return;
        }
        const span = startPublishSpan(tracing, row);
        const { traceparent } = tracing.tracing.headers(trace.setSpan(ROOT_CONTEXT, span));
        let ack: PublishedEvent;
        try {
          ack = await publisher.publish({
            id: row.id,
            type: row.event_type,
            resourceType: row.resource_type,
            merchantId: row.merchant_id,
            data,
            traceparent,
          });
        } catch (error) {
          span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : "Error");
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          failures.push({ id: row.id, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), transient: true });
          // Later events of this resource must wait for this one: stop the chain here.
          return;
        }
        // The stream dropped a duplicate's message: deliveries continue the trace of its first copy.
        if (ack.duplicate) span.setAttribute("subdata.duplicate", true);
        span.end();
        logger.debug({ eventId: row.id, traceId: span.spanContext().traceId, seq: ack.seq }, "event published");
        if (ack.duplicate) logger.info({ eventId: row.id, seq: ack.seq }, "event was already in the stream (re-published after a crash)");
        publishedIds.push(row.id);
      }
    }),
  );
  return { publishedIds, failures };
}

export function createRelay(deps: RelayDeps): Relay {
  const { repository, publisher, logger, batchSize } = deps;
  const stopping = new AbortController();
  const rounds = Math.max(1, deps.rounds ?? 1);
  let woken = false;
  const wakeWaiters = new Set<() => void>();
  let loop: Promise<void> | undefined;
  let healthy = false;

  function waitForWake(ms: number): Promise<void> {
    // An aborted signal fires no more "abort" events: a round that ends after stop() must not wait.
    if (woken || stopping.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeWaiters.delete(done);
        stopping.signal.removeEventListener("abort", done);
        resolve();
      }
      wakeWaiters.add(done);
      stopping.signal.addEventListener("abort", done, { once: true });
    });
  }

  async function runOnce(): Promise<RoundResult> {
    woken = false;
    let transient: PublishOutcome["failures"] = [];
    const { claimed, outcome } = await repository.withClaimedBatch(batchSize, async (rows) => {
      const result = await publishBatch(rows, publisher, logger, deps.tracing);
      transient = result.failures.filter((failure) => failure.transient);
      return result;
    });
    if (transient.length > 0) {
      logger.warn(
        { failed: transient.length, published: outcome.publishedIds.length, firstError: transient[0]?.error },
        "events not published; they stay pending and will be retried",
      );
    } else if (claimed > 0) {
      logger.debug({ claimed, published: outcome.publishedIds.length }, "published outbox batch");
    }
    return {
      claimed,
      published: outcome.publishedIds.length,
      failed: transient.length,
      unconvertible: outcome.failures.length - transient.length,
    };
  }

  /** Runs `step` with a full batch until it removes less than one; stops early on stop(). */
  async function drain(table: PurgedTable, batch: number, step: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    while (!stopping.signal.aborted) {
      const removed = await step(batch);
      total += removed;
      deps.onPurge?.(table, removed);
      if (removed < batch) break;
    }
    return total;
  }

  async function purge(): Promise<PurgeResult> {
    const retention = deps.retention;
    if (!retention) return { outboxRows: 0, feedCommits: 0 };
    const outboxRows = await drain("event_outbox", retention.outboxBatch ?? 10_000, (limit) => repository.purgePublished(retention.outboxDays, limit));
    const feedCommits = await drain("change_commits", retention.feedBatch ?? 1_000, (limit) => repository.purgeChangeEvents(retention.feedDays, limit));
    if (outboxRows > 0 || feedCommits > 0) {
      logger.info({ outboxRows, feedCommits, outboxDays: retention.outboxDays, feedDays: retention.feedDays }, "purged old outbox rows and feed events");
    }
    return { outboxRows, feedCommits };
  }

  /** Purges now and then every `everyMs`, beside the rounds (on a connection of its own), until stop(). */
  async function purgeLoop(everyMs: number): Promise<void> {
    while (!stopping.signal.aborted) {
      try {
        await purge();
      } catch (error) {
        logger.warn({ err: error }, "purge failed; will try again later");
      }
      await sleep(everyMs, stopping.signal);
    }
  }

  /** One claim → publish → mark loop; `rounds` of them run side by side. */
  async function lane(): Promise<void> {
    const failureBackoff = createBackoff({ initialMs: 200, maxMs: 30_000 });
    while (!stopping.signal.aborted) {
      let round: RoundResult;
      try {
        round = await runOnce();
        deps.onRound?.(round);
      } catch (error) {
        // Postgres down (or a commit failed): nothing was marked, so everything is retried later.
        healthy = false;
        logger.warn({ err: error }, "outbox round failed; backing off");
        await sleep(failureBackoff.next(), stopping.signal);
        continue;
      }
      if (round.failed > 0) {
        // NATS down or refusing: the rows stay pending; retry with growing delays.
        healthy = false;
        await sleep(failureBackoff.next(), stopping.signal);
        continue;
      }
      healthy = true;
      failureBackoff.reset();
      // A full batch means more may be waiting; otherwise wait for a wake-up or the poll.
      if (round.published < batchSize) await waitForWake(deps.pollIntervalMs);
    }
  }

  async function run(): Promise<void> {
    const purging = deps.retention ? purgeLoop(deps.retention.everyMs) : Promise.resolve();
    await Promise.all([...Array.from({ length: rounds }, () => lane()), purging]);
  }

  return {
    start() {
      loop ??= run();
    },
    wake() {
      woken = true;
      for (const waiter of [...wakeWaiters]) waiter();
    },
    runOnce,
    purge,
    async stop() {
      stopping.abort();
      await loop;
    },
    get healthy() {
      return healthy;
    },
  };
}
