import { Code } from "@connectrpc/connect";
import { createPgListener, ErrorReason, errorWithReason, type Logger } from "@subdata/runtime";

/** The channel the feed's commit trigger notifies, with the merchant id as payload. */
const CHANGES_CHANNEL = "subdata_changes";

export interface ChangeWaiter {
  /** Resolves at the first commit of the merchant's events after subscribe(), or when the watch has a gap. */
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
  connectionString: string;
  logger: Logger;
  /** The bound on waiters in this process; each holds a request open. */
  maxWaiters: number;
  /**
   * While the LISTEN is down, every waiter is woken this often to read again, so a long poll still
   * returns within this of a commit.
   */
  fallbackPollMs?: number;
}

/**
 * Long-poll support for the change feed: one LISTEN connection per process, fanned out to the
 * requests waiting for a merchant. Losing the connection costs latency (the fallback poll), never an
 * event: a woken request reads the feed again, and the feed is the truth.
 */
export function createChangeNotifier(options: ChangeNotifierOptions): ChangeNotifier {
  const byMerchant = new Map<string, Set<() => void>>();
  let waiting = 0;

  const wake = (merchantId: string) => {
    const waiters = byMerchant.get(merchantId);
    if (!waiters) return;
    byMerchant.delete(merchantId);
    for (const resolve of waiters) resolve();
  };
  const wakeAll = () => {
    for (const merchantId of [...byMerchant.keys()]) wake(merchantId);
  };

  const listener = createPgListener({
    connectionString: options.connectionString,
    channel: CHANGES_CHANNEL,
    applicationName: "subdata-query-changes",
    logger: options.logger,
    onNotification: wake,
    onGap: wakeAll,
  });
  listener.start();
  const fallback = setInterval(() => {
    if (!listener.listening) wakeAll();
  }, options.fallbackPollMs ?? 1_000);
  fallback.unref();

  return {
    subscribe(merchantId) {
      if (waiting >= options.maxWaiters) {
        throw errorWithReason("too many long-polling reads are waiting in this query service", Code.ResourceExhausted, ErrorReason.TOO_MANY_WAITING_READS);
      }
      waiting++;
      let resolveChanged!: () => void;
      let done = false;
      const changed = new Promise<void>((resolve) => {
        resolveChanged = resolve;
      });
      const finish = () => {
        if (done) return;
        done = true;
        waiting--;
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
      clearInterval(fallback);
      wakeAll();
      await listener.close();
    },
  };
}
