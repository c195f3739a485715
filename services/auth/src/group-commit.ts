/**
 * Group commit: callers write one item each and wait; items that arrive while a flush is running are
 * queued and written together by the next flush, which starts as soon as the previous one finished.
 * There is no timer: an idle writer flushes a lone item at once (a fixed window collapsed
 * single-connection throughput in measurements.md), and under load batches grow by themselves.
 *
 * Guarantees: a caller's promise resolves only after the flush holding its item succeeded, and rejects
 * (with the flush's error) exactly when that flush failed; no item is flushed twice or dropped; one
 * flush runs at a time, in arrival order.
 */
export interface GroupCommitWriter<T> {
  write(item: T): Promise<void>;
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

export interface GroupCommitOptions<T> {
  /** Writes the whole batch durably, or throws. */
  flush: (items: readonly T[]) => Promise<void>;
  /** Upper bound on a batch; the rest waits for the next flush. */
  maxBatchSize: number;
  /** Called after every flush, for metrics and tests. */
  onFlush?: (outcome: { size: number; ok: boolean }) => void;
  /** The error given to writes after close(). */
  closedError?: () => Error;
}

interface Pending<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
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
      const batch = queue.splice(0, options.maxBatchSize);
      stats.flushes++;
      stats.largestBatch = Math.max(stats.largestBatch, batch.length);
      let failure: { error: unknown } | undefined;
      try {
        await options.flush(batch.map((pending) => pending.item));
        stats.items += batch.length;
      } catch (error) {
        stats.failedFlushes++;
        failure = { error };
      }
      options.onFlush?.({ size: batch.length, ok: !failure });
      for (const pending of batch) {
        if (failure) pending.reject(failure.error);
        else pending.resolve();
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

  return {
    stats,
    write(item) {
      if (closed) return Promise.reject(options.closedError?.() ?? new Error("writer is closed"));
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        startDrain();
      });
    },
    async close() {
      closed = true;
      while (draining) await draining;
    },
  };
}
