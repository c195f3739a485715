import type { Logger } from "@subdata/runtime";
import type { SecurityEventRepository } from "./security-event-repository.ts";

/**
 * Retention of the security log: failed authentications older than `retentionDays` are deleted, in
 * batches of `batchSize` (short statements, no long lock on the table the flood writes into), at
 * most `maxBatchesPerRun` per run, one run at start and then every `everyMs`. A backlog larger than
 * one run (first start after a long time, a huge flood) drains over the following runs. Several
 * replicas may purge at once; the database skips rows another one holds.
 */
export interface SecurityEventRetention {
  /** One run now; resolves with the number of rows deleted. Throws when the database does. */
  runOnce(): Promise<number>;
  /** Runs now and then every `everyMs` until stop(); failures are logged and retried next time. */
  start(): void;
  /** Cancels the timer and waits for a run in progress (which stops after its current batch). */
  stop(): Promise<void>;
}

export interface SecurityEventRetentionOptions {
  repository: Pick<SecurityEventRepository, "purgeOlderThan">;
  logger: Logger;
  retentionDays: number;
  everyMs?: number;
  batchSize?: number;
  maxBatchesPerRun?: number;
}

export function createSecurityEventRetention(options: SecurityEventRetentionOptions): SecurityEventRetention {
  const everyMs = options.everyMs ?? 60 * 60 * 1000;
  const batchSize = options.batchSize ?? 5_000;
  const maxBatchesPerRun = options.maxBatchesPerRun ?? 100;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let started = false;
  let stopped = false;

  async function runOnce(): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < maxBatchesPerRun && !stopped; batch++) {
      const purged = await options.repository.purgeOlderThan(options.retentionDays, batchSize);
      total += purged;
      if (purged < batchSize) break;
    }
    if (total > 0) options.logger.info({ purged: total, retentionDays: options.retentionDays }, "purged old security events");
    return total;
  }

  function scheduled(): void {
    running = runOnce()
      .catch((error: unknown) => options.logger.warn({ err: error }, "security event purge failed; will try again later"))
      .finally(() => {
        if (stopped) return;
        timer = setTimeout(scheduled, everyMs);
        // Retention never keeps the process alive on its own.
        timer.unref();
      });
  }

  return {
    runOnce,
    start() {
      if (started) return;
      started = true;
      scheduled();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
