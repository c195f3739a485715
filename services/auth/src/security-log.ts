import type { Logger } from "@subdata/runtime";
import { createGroupCommitWriter } from "@subdata/runtime";
import type { SecurityEvent, SecurityEventRepository } from "./security-event-repository.ts";

/**
 * The log of failed authentications. Group-committed like the audit log, because a flood of bad keys
 * must not cost one INSERT each. Recording never fails the caller: the authentication was refused
 * anyway, and a lost security event is logged as an error instead.
 */
export interface SecurityLog {
  /** Resolves once the event is written (or its write has failed and been logged). */
  record(event: SecurityEvent): Promise<void>;
  close(): Promise<void>;
}

const MAX_TEXT = 512;
const SECURITY_LOG_MAX_QUEUED = 4_096;
const SECURITY_LOG_MAX_WAIT_MS = 5_000;

/** Edge-supplied text is attacker-controlled: bound it and drop NULs, which Postgres text refuses. */
function clean(value: string): string {
  return value.replaceAll("\u0000", "").slice(0, MAX_TEXT);
}

export function createSecurityLog(options: { repository: Pick<SecurityEventRepository, "insertMany">; logger: Logger; maxBatchSize?: number }): SecurityLog {
  const writer = createGroupCommitWriter<SecurityEvent>({
    flush: (events) => options.repository.insertMany(events),
    maxBatchSize: options.maxBatchSize ?? 500,
    // Bounded like the audit queue: with the database slow, a flood of bad keys is logged as lost
    // events rather than held in memory.
    maxQueued: SECURITY_LOG_MAX_QUEUED,
    maxWaitMs: SECURITY_LOG_MAX_WAIT_MS,
  });
  return {
    close: () => writer.close(),
    async record(event) {
      try {
        await writer.write({
          ...event,
          clientIp: clean(event.clientIp),
          userAgent: clean(event.userAgent),
          requestId: clean(event.requestId),
        });
      } catch (error) {
        options.logger.error({ err: error, reason: event.reason }, "security event not written");
      }
    },
  };
}
