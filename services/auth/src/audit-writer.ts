import { type OverloadReason, unavailable, type Logger } from "@subdata/runtime";
import type { AuditRecord, AuditRepository } from "./audit-repository.ts";
import { createGroupCommitWriter, type GroupCommitStats } from "@subdata/runtime";

/**
 * Durable audit writes with group commit: RecordRead calls that arrive while an INSERT runs go into the
 * next INSERT together. record() resolves once the row is committed and rejects with UNAVAILABLE
 * ("audit log") when its batch could not be written — the gateway must then answer 503 and serve nothing.
 * Bounded like the gateway's queue: past maxQueued waiting rows a record is refused at once, and a
 * record not committed within maxWaitMs is refused then, both UNAVAILABLE.
 */
export interface AuditWriter {
  record(record: AuditRecord): Promise<void>;
  /** Records all of them in the same INSERT; resolves once it committed. */
  recordAll(records: readonly AuditRecord[]): Promise<void>;
  /** Refuses new records and waits for the queued ones to be written. */
  close(): Promise<void>;
  readonly stats: GroupCommitStats;
}

export interface AuditWriterOptions {
  repository: Pick<AuditRepository, "insertMany">;
  logger: Logger;
  /** Rows per INSERT at most (default 500; 14 arrays of 500 values stay far below protocol limits). */
  maxBatchSize?: number;
  onFlush?: (outcome: { size: number; ok: boolean }) => void;
  /** Rows waiting for an INSERT at most (besides the one running); SUBDATA_AUDIT_QUEUE_MAX. */
  maxQueued?: number;
  /** A record not committed within this is refused; SUBDATA_AUDIT_QUEUE_WAIT_MS. */
  maxWaitMs?: number;
  /** Called once per record refused by those bounds (metrics). */
  onRefused?: (reason: OverloadReason) => void;
}

export function createAuditWriter(options: AuditWriterOptions): AuditWriter {
  const writer = createGroupCommitWriter<AuditRecord>({
    flush: (records) => options.repository.insertMany(records),
    maxBatchSize: options.maxBatchSize ?? 500,
    closedError: () => unavailable("audit log"),
    ...(options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued }),
    ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
    overloadedError(reason) {
      options.onRefused?.(reason);
      return unavailable("audit log");
    },
    onFlush(outcome) {
      if (!outcome.ok) options.logger.error({ batch: outcome.size }, "audit batch not written; its reads fail with 503");
      options.onFlush?.(outcome);
    },
  });
  const written = async (write: Promise<void>) => {
    try {
      await write;
    } catch (error) {
      options.logger.warn({ err: error }, "audit write failed");
      throw unavailable("audit log");
    }
  };
  return {
    stats: writer.stats,
    close: () => writer.close(),
    async record(record) {
      await written(writer.write(record));
    },
    async recordAll(records) {
      await written(writer.writeAll(records));
    },
  };
}
