import type { Logger } from "@subdata/runtime";
import type { AuditRefusal } from "./audit-recorder.ts";

/**
 * The log of reads answered 503 because they could not be audited. Refusals come in floods (the audit
 * queue full, the auth service down), exactly when a line per request would hurt most, so the log is
 * bounded: the first refusal after a quiet interval is logged at once, with its request and error;
 * the ones that follow within `intervalMs` are only counted, and one summary line per interval gives
 * their number by reason and the last error. subdata_gateway_audit_refused_total still counts each.
 */
export interface AuditRefusalLog {
  /** One read refused; `log` is its request's logger, for the line that names it. */
  refused(reason: AuditRefusal, error: unknown, log: Pick<Logger, "error">): void;
  /** Logs what is counted but not yet logged, and stops the timer. */
  close(): void;
}

/** Runs `run` once after `delayMs`; returns a function that cancels it. */
export type Schedule = (run: () => void, delayMs: number) => () => void;

export interface AuditRefusalLogOptions {
  logger: Pick<Logger, "error">;
  /** At most one line per interval while refusals continue. */
  intervalMs: number;
  /** setTimeout, unref'd (a pending summary never keeps the process alive), when omitted. */
  schedule?: Schedule;
}

const unrefTimeout: Schedule = (run, delayMs) => {
  const timer = setTimeout(run, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};

export function createAuditRefusalLog(options: AuditRefusalLogOptions): AuditRefusalLog {
  const schedule = options.schedule ?? unrefTimeout;
  /** Set while an interval that began with a logged line runs; refusals then are counted. */
  let cancel: (() => void) | undefined;
  let counted: Partial<Record<AuditRefusal, number>> = {};
  let total = 0;
  let lastError: unknown;

  const summarise = (): boolean => {
    if (total === 0) return false;
    options.logger.error(
      { refused: total, reasons: counted, err: lastError, intervalMs: options.intervalMs },
      `${total} more reads answered 503 since the last line: audit record failed`,
    );
    counted = {};
    total = 0;
    lastError = undefined;
    return true;
  };
  const endOfInterval = () => {
    // A line went out: the next one waits a whole interval. None did: the next refusal is logged at once.
    cancel = summarise() ? schedule(endOfInterval, options.intervalMs) : undefined;
  };

  return {
    refused(reason, error, log) {
      if (cancel) {
        counted[reason] = (counted[reason] ?? 0) + 1;
        total += 1;
        lastError = error;
        return;
      }
      log.error({ err: error, reason }, "audit record failed; answering 503");
      cancel = schedule(endOfInterval, options.intervalMs);
    },
    close() {
      cancel?.();
      cancel = undefined;
      summarise();
    },
  };
}
