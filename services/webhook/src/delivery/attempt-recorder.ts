import type { Logger, Pool } from "@subdata/runtime";
import { type DisabledEndpoints, type FinishedAttempt, type RecordOptions, recordAttempts } from "./record-repository.ts";

/**
 * Group commit for finished attempts: `add` queues one and resolves once it is committed. A flush
 * starts as soon as one is queued and none is running, and takes everything queued meanwhile (no
 * timer: an idle worker records at once, a busy one records many attempts per transaction). A failed
 * flush is retried a few times; after that the attempts are given up and their claim lease brings
 * them back (at-least-once).
 */

export interface RecordedAttempt {
  /** Set on the one attempt whose batch disabled its endpoint. */
  disabledReason: string | null;
}

export interface AttemptRecorder {
  add(attempt: FinishedAttempt): Promise<RecordedAttempt>;
  /** Attempts queued or being written. */
  readonly pending: number;
  /** Resolves when every attempt added so far is committed or given up. */
  drain(): Promise<void>;
}

export interface AttemptRecorderOptions extends RecordOptions {
  pool: Pool;
  logger: Logger;
  /** Attempts per transaction at most. */
  maxBatch?: number;
  /** Delays before retrying a failed flush; one entry per retry. */
  retryDelaysMs?: readonly number[];
  /**
   * After each flush, with its attempts (finished heads may have released later versions of their
   * endpoints). Also after a flush that failed for good: nothing was released then, and the caller
   * merely looks again once too often.
   */
  onFlushed?: (attempts: readonly FinishedAttempt[]) => void;
}

interface Queued {
  attempt: FinishedAttempt;
  resolve(recorded: RecordedAttempt): void;
  reject(error: unknown): void;
}

export function createAttemptRecorder(options: AttemptRecorderOptions): AttemptRecorder {
  const maxBatch = options.maxBatch ?? 512;
  const retryDelaysMs = options.retryDelaysMs ?? [100, 500, 2_000];
  const queue: Queued[] = [];
  let flushing: Promise<void> | undefined;
  let inBatch = 0;

  async function write(batch: Queued[]): Promise<DisabledEndpoints> {
    for (let retry = 0; ; retry++) {
      try {
        return await recordAttempts(
          options.pool,
          batch.map((entry) => entry.attempt),
          options,
        );
      } catch (error) {
        const delay = retryDelaysMs[retry];
        if (delay === undefined) throw error;
        options.logger.warn({ err: error, attempts: batch.length }, "recording webhook attempts failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  async function flushLoop(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      inBatch = batch.length;
      try {
        const disabled = await write(batch);
        const reported = new Set<string>();
        for (const entry of batch) {
          const endpointId = entry.attempt.delivery.endpointId;
          const reason = disabled.get(endpointId);
          const first = reason !== undefined && !reported.has(endpointId);
          if (first) reported.add(endpointId);
          entry.resolve({ disabledReason: first ? reason : null });
        }
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      } finally {
        inBatch = 0;
      }
      options.onFlushed?.(batch.map((entry) => entry.attempt));
    }
  }

  function kick(): void {
    if (flushing) return;
    flushing = flushLoop().finally(() => {
      flushing = undefined;
      // Something queued during the last await of the loop's final round.
      if (queue.length > 0) kick();
    });
  }

  return {
    add(attempt) {
      return new Promise<RecordedAttempt>((resolve, reject) => {
        queue.push({ attempt, resolve, reject });
        kick();
      });
    },
    get pending() {
      return queue.length + inBatch;
    },
    async drain() {
      while (flushing) await flushing;
    },
  };
}
