import { createCapturedLogger } from "@subdata/runtime/test-support";
import { describe, expect, it } from "vitest";
import { createAuditRefusalLog, type Schedule } from "./audit-refusal-log.ts";

/** A schedule run by hand: `elapse()` ends the pending interval. */
function manualSchedule() {
  let pending: { run: () => void; delayMs: number } | undefined;
  const schedule: Schedule = (run, delayMs) => {
    const entry = { run, delayMs };
    pending = entry;
    return () => {
      if (pending === entry) pending = undefined;
    };
  };
  return {
    schedule,
    get pendingDelayMs() {
      return pending?.delayMs;
    },
    elapse() {
      const entry = pending;
      pending = undefined;
      entry?.run();
    },
  };
}

function setup() {
  const clock = manualSchedule();
  const captured = createCapturedLogger({ name: "gateway" });
  const parsed = () => captured.lines.map((line) => JSON.parse(line) as Record<string, unknown> & { msg: string });
  const log = createAuditRefusalLog({ logger: captured.logger, intervalMs: 10_000, schedule: clock.schedule });
  const requestLog = captured.logger.child({ reqId: "req_1" });
  const refuse = (reason: "queue_full" | "deadline" | "failed", message: string = reason) => log.refused(reason, new Error(message), requestLog);
  return {
    clock,
    log,
    refuse,
    /** Lines naming a request: the refusals logged one by one. */
    requestLines: () => parsed().filter((line) => line.reqId !== undefined),
    summaries: () => parsed().filter((line) => line.reqId === undefined),
  };
}

describe("the audit refusal log", () => {
  it("logs the first refusal on its request, then one summary per interval with the count by reason and the last error", () => {
    const { clock, refuse, requestLines, summaries } = setup();
    refuse("queue_full", "audit queue full");
    expect(requestLines()).toEqual([
      expect.objectContaining({
        reqId: "req_1",
        level: "error",
        reason: "queue_full",
        msg: "audit record failed; answering 503",
        err: expect.objectContaining({ message: "audit queue full" }),
      }),
    ]);
    expect(clock.pendingDelayMs).toBe(10_000);

    for (let i = 0; i < 999; i++) refuse("queue_full");
    refuse("deadline", "audit record not written in time");
    expect(requestLines()).toHaveLength(1);
    expect(summaries()).toHaveLength(0);

    clock.elapse();
    expect(summaries()).toEqual([
      expect.objectContaining({
        level: "error",
        refused: 1000,
        reasons: { queue_full: 999, deadline: 1 },
        err: expect.objectContaining({ message: "audit record not written in time" }),
        intervalMs: 10_000,
        msg: "1000 more reads answered 503 since the last line: audit record failed",
      }),
    ]);
    // Still within the flood: the next interval counts again.
    expect(clock.pendingDelayMs).toBe(10_000);
    refuse("failed");
    clock.elapse();
    expect(summaries().at(-1)).toMatchObject({ refused: 1, reasons: { failed: 1 } });
    expect(requestLines()).toHaveLength(1);
  });

  it("logs the next refusal at once, with its request, once an interval passed without any", () => {
    const { clock, refuse, requestLines, summaries } = setup();
    refuse("deadline");
    clock.elapse();
    expect(summaries()).toHaveLength(0);
    expect(clock.pendingDelayMs).toBeUndefined();
    refuse("failed");
    expect(requestLines().map((line) => line.reason)).toEqual(["deadline", "failed"]);
  });

  it("logs what it counted when closed, and schedules nothing more", () => {
    const { clock, log, refuse, summaries } = setup();
    refuse("queue_full");
    refuse("queue_full");
    refuse("queue_full");
    log.close();
    expect(summaries().map((line) => line.refused)).toEqual([2]);
    expect(clock.pendingDelayMs).toBeUndefined();
    log.close();
    expect(summaries()).toHaveLength(1);
  });
});
