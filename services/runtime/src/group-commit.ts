/**
 * Group commit: callers write one item each and wait; items that arrive while a flush is running are
 * queued and written together by the next flush, which starts as soon as the previous one finished.
 * There is no timer: an idle writer flushes a lone item at once (a fixed window caps a single caller
 * at one item per window), and under load batches grow by themselves.
 *
 * Used for audit rows (an INSERT per batch in the auth service) and for audit calls (one RecordReads
 * RPC per batch in the gateway).
 *
 * Guarantees: a caller's promise resolves only after the flush holding its item succeeded, and rejects
 * when that flush failed (with its error) or refused the caller's own item; no item is flushed twice;
 * one flush runs at a time, in arrival order.
 *
 * Bounds (maxQueued, maxWaitMs): when the sink is slow the queue must not grow until the heap dies. A
 * write that would take the queue past maxQueued items is refused at once, and a write not flushed
 * within maxWaitMs is refused then: if it was still queued it is never flushed; if its flush was already
 * running, the caller stops waiting and that flush's outcome no longer concerns it (its items may still
 * be written). Either refusal is `overloadedError(reason)`.
 */
export interface GroupCommitWriter<T> {
  write(item: T): Promise<void>;
  /**
   * Writes `items` in one flush together (never split across flushes), all or nothing: resolves once
   * that flush succeeded, rejects with the flush's error or the first of the items' own errors.
   */
  writeAll(items: readonly T[]): Promise<void>;
  /** Refuses new writes and resolves once everything queued has been flushed (or has failed). */
  close(): Promise<void>;
  readonly stats: GroupCommitStats;
}

export interface GroupCommitStats {
  /** Flushes attempted (each one statement for a database flush). */
  readonly flushes: number;
  readonly failedFlushes: number;
  /** Items written successfully. */
  readonly items: number;
  readonly largestBatch: number;
  /** Writes refused because the queue was full. */
  readonly refusedFull: number;
  /** Writes refused because they waited past maxWaitMs. */
  readonly refusedDeadline: number;
}

/** Why a bounded writer refused a write. */
export type OverloadReason = "queue_full" | "deadline";

/**
 * What a flush may report per item, in the order of the items it was given: undefined for an item
 * written, an error for an item refused on its own (the others of the batch still succeed).
 */
export type ItemOutcomes = ReadonlyArray<unknown>;

export interface GroupCommitOptions<T> {
  /** Writes the whole batch durably, or throws; may refuse single items through ItemOutcomes. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a flush that refuses nothing is a plain async function, typed Promise<void>
  flush: (items: readonly T[]) => Promise<void | ItemOutcomes>;
  /** Upper bound on a batch (a writeAll larger than this is flushed alone); the rest waits. */
  maxBatchSize: number;
  /** Called after every flush, for metrics and tests. */
  onFlush?: (outcome: { size: number; ok: boolean }) => void;
  /** The error given to writes after close(). */
  closedError?: () => Error;
  /** Items waiting for a flush (not counting the one running) at most; a write beyond is refused at once. Unbounded when unset. */
  maxQueued?: number;
  /** How long a write may wait for its flush to succeed before it is refused. Unbounded when unset. */
  maxWaitMs?: number;
  /** The error given to a write refused by maxQueued or maxWaitMs; also called once per refusal (metrics, logs). */
  overloadedError?: (reason: OverloadReason) => Error;
}

interface Pending<T> {
  items: readonly T[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Takes whole pending writes from the queue's head while they fit in `max` items (at least one). */
function takeBatch<T>(queue: Array<Pending<T>>, max: number): Array<Pending<T>> {
  let count = 0;
  let take = 0;
  while (take < queue.length && (take === 0 || count + (queue[take] as Pending<T>).items.length <= max)) {
    count += (queue[take] as Pending<T>).items.length;
    take++;
  }
  return queue.splice(0, take);
}

export function createGroupCommitWriter<T>(options: GroupCommitOptions<T>): GroupCommitWriter<T> {
  if (!Number.isInteger(options.maxBatchSize) || options.maxBatchSize < 1) throw new Error("maxBatchSize must be a positive integer");
  const queue: Array<Pending<T>> = [];
  const stats = { flushes: 0, failedFlushes: 0, items: 0, largestBatch: 0, refusedFull: 0, refusedDeadline: 0 };
  /** Items in the queue (not yet taken by a flush). */
  let queuedItems = 0;
  const overloaded = (reason: OverloadReason) => options.overloadedError?.(reason) ?? new Error(`group commit writer overloaded: ${reason}`);
  let draining: Promise<void> | undefined;
  let closed = false;

  async function drain(): Promise<void> {
    // Yield once so that writes made in the same tick as the first one join its batch.
    await Promise.resolve();
    while (queue.length > 0) {
      const batch = takeBatch(queue, options.maxBatchSize);
      for (const pending of batch) queuedItems -= pending.items.length;
      const items = batch.length === 1 ? (batch[0] as Pending<T>).items : batch.flatMap((pending) => pending.items);
      stats.flushes++;
      stats.largestBatch = Math.max(stats.largestBatch, items.length);
      let failure: { error: unknown } | undefined;
      let outcomes: ItemOutcomes | undefined;
      try {
        outcomes = (await options.flush(items)) || undefined;
      } catch (error) {
        stats.failedFlushes++;
        failure = { error };
      }
      options.onFlush?.({ size: items.length, ok: !failure });
      let index = 0;
      for (const pending of batch) {
        // The deadline's refusal already answered this caller (its settled guard ignores this outcome);
        // what the flush wrote still counts.
        const own = outcomes ? outcomes.slice(index, index + pending.items.length).find((outcome) => outcome !== undefined) : undefined;
        index += pending.items.length;
        if (failure) pending.reject(failure.error);
        else if (own !== undefined) pending.reject(own);
        else {
          stats.items += pending.items.length;
          pending.resolve();
        }
      }
    }
  }

  function startDrain(): void {
    draining ??= drain().finally(() => {
      draining = undefined;
      // A write may have arrived between the last check and now.
      if (queue.length > 0) startDrain();
    });
  }

  function enqueue(items: readonly T[]): Promise<void> {
    if (closed) return Promise.reject(options.closedError?.() ?? new Error("writer is closed"));
    if (items.length === 0) return Promise.resolve();
    // An oversized write still goes alone into an empty queue: the bound is on what waits behind others.
    if (options.maxQueued !== undefined && queuedItems > 0 && queuedItems + items.length > options.maxQueued) {
      stats.refusedFull++;
      return Promise.reject(overloaded("queue_full"));
    }
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const pending: Pending<T> = {
        items,
        resolve() {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve();
        },
        reject(error) {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          reject(error);
        },
      };
      if (options.maxWaitMs !== undefined) {
        timer = setTimeout(() => {
          if (settled) return;
          // Still queued: it leaves the queue and is never flushed (deadlines expire in arrival order, so
          // it is at or near the head). In a running flush: the caller stops waiting for it.
          const index = queue.indexOf(pending);
          if (index >= 0) {
            queue.splice(index, 1);
            queuedItems -= items.length;
          }
          stats.refusedDeadline++;
          pending.reject(overloaded("deadline"));
        }, options.maxWaitMs);
      }
      queue.push(pending);
      queuedItems += items.length;
      startDrain();
    });
  }

  return {
    stats,
    write: (item) => enqueue([item]),
    writeAll: (items) => enqueue(items),
    async close() {
      closed = true;
      while (draining) await draining;
    },
  };
}
