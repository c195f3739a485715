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
 * exactly when that flush failed (with its error) or refused the caller's own item; no item is
 * flushed twice or dropped; one flush runs at a time, in arrival order.
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
}

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
  const stats = { flushes: 0, failedFlushes: 0, items: 0, largestBatch: 0 };
  let draining: Promise<void> | undefined;
  let closed = false;

  async function drain(): Promise<void> {
    // Yield once so that writes made in the same tick as the first one join its batch.
    await Promise.resolve();
    while (queue.length > 0) {
      const batch = takeBatch(queue, options.maxBatchSize);
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
    return new Promise<void>((resolve, reject) => {
      queue.push({ items, resolve, reject });
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
