import { Code } from "@connectrpc/connect";
import { createCommitWatcher } from "@subdata/events";
import { ErrorReason, errorWithReason, type Logger, type Queryable, type Registry } from "@subdata/runtime";

export interface ChangeWaiter {
  /** Resolves at the first commit of the merchant's events after subscribe(), or when commits went unseen. */
  readonly changed: Promise<void>;
  cancel(): void;
}

export interface ChangeNotifier {
  /**
   * Watches one merchant's commits. Subscribe before reading, then wait: a commit between the read and
   * the wait still resolves `changed`. Throws RESOURCE_EXHAUSTED when maxWaiters are already waiting.
   */
  subscribe(merchantId: string): ChangeWaiter;
  close(): Promise<void>;
}

export interface ChangeNotifierOptions {
  /**
   * The commit watch's connection: a pool of its own (one connection, no generic plans), so the watch
   * never waits behind reads for a slot and its range read is planned for the range it reads.
   */
  db: Queryable;
  logger: Logger;
  /** The bound on waiters in this process; each holds a request open. */
  maxWaiters: number;
  /** How often commits are looked for while anyone waits: a long poll returns within this of a commit. */
  pollIntervalMs: number;
  /** Looking goes on this long after the last waiter left, so a reader's next long poll finds it running. */
  idleAfterMs?: number;
  /** Where the commit watch registers its metrics. */
  metrics?: Registry;
}

/**
 * Long-poll support for the change feed: one commit watcher per process (commit-watcher.ts), fanned
 * out to the requests waiting for a merchant. It polls only while someone waits (and idleAfterMs
 * after), and an idle replica keeps no timer running. A wake-up never carries data: a woken request
 * reads the feed again, and the feed is the truth.
 */
export function createChangeNotifier(options: ChangeNotifierOptions): ChangeNotifier {
  const byMerchant = new Map<string, Set<() => void>>();
  const idleAfterMs = options.idleAfterMs ?? 30_000;
  let waiting = 0;
  let lastWaitEndedAt = Number.NEGATIVE_INFINITY;

  const wake = (merchantId: string) => {
    const waiters = byMerchant.get(merchantId);
    if (!waiters) return;
    byMerchant.delete(merchantId);
    for (const resolve of waiters) resolve();
  };
  const wakeAll = () => {
    for (const merchantId of [...byMerchant.keys()]) wake(merchantId);
  };

  const watcher = createCommitWatcher({
    db: options.db,
    logger: options.logger,
    intervalMs: options.pollIntervalMs,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    active: () => waiting > 0 || performance.now() - lastWaitEndedAt < idleAfterMs,
    onCommits: (merchantIds) => {
      for (const merchantId of merchantIds) wake(merchantId);
    },
    onUnknown: wakeAll,
  });
  watcher.start();

  return {
    subscribe(merchantId) {
      if (waiting >= options.maxWaiters) {
        throw errorWithReason("too many long-polling reads are waiting in this query service", Code.ResourceExhausted, ErrorReason.TOO_MANY_WAITING_READS);
      }
      waiting++;
      watcher.resume();
      let resolveChanged!: () => void;
      let done = false;
      const changed = new Promise<void>((resolve) => {
        resolveChanged = resolve;
      });
      const finish = () => {
        if (done) return;
        done = true;
        waiting--;
        lastWaitEndedAt = performance.now();
        resolveChanged();
      };
      let waiters = byMerchant.get(merchantId);
      if (!waiters) {
        waiters = new Set();
        byMerchant.set(merchantId, waiters);
      }
      waiters.add(finish);
      return {
        changed,
        cancel() {
          const current = byMerchant.get(merchantId);
          current?.delete(finish);
          if (current?.size === 0) byMerchant.delete(merchantId);
          finish();
        },
      };
    },
    async close() {
      await watcher.close();
      wakeAll();
    },
  };
}
