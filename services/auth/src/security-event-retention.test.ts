import { describe, expect, it } from "vitest";
import { createSecurityEventRetention } from "./security-event-retention.ts";
import { createCapturedLogger } from "@subdata/runtime/test-support";

const capture = () => createCapturedLogger({ name: "retention-test", level: "debug" });

describe("security event retention", () => {
  it("purges in batches until one comes back short, within the run's budget", async () => {
    const calls: Array<[number, number]> = [];
    const backlog = [3, 3, 1];
    const { logger } = capture();
    const retention = createSecurityEventRetention({
      repository: {
        purgeOlderThan: async (days, max) => {
          calls.push([days, max]);
          return backlog.shift() ?? 0;
        },
      },
      logger,
      retentionDays: 30,
      batchSize: 3,
    });
    expect(await retention.runOnce()).toBe(7);
    expect(calls).toEqual([
      [30, 3],
      [30, 3],
      [30, 3],
    ]);

    const capped = createSecurityEventRetention({
      repository: { purgeOlderThan: async () => 3 },
      logger,
      retentionDays: 30,
      batchSize: 3,
      maxBatchesPerRun: 4,
    });
    expect(await capped.runOnce()).toBe(12);
  });

  it("runs at start; a failed run is logged, not thrown, and stop waits for the run in progress", async () => {
    const { logger, lines } = capture();
    let calls = 0;
    const retention = createSecurityEventRetention({
      repository: {
        purgeOlderThan: async () => {
          calls += 1;
          throw new Error("database gone");
        },
      },
      logger,
      retentionDays: 90,
      everyMs: 3_600_000,
    });
    retention.start();
    retention.start();
    await retention.stop();
    expect(calls).toBe(1);
    expect(lines.filter((line) => line.includes("security event purge failed"))).toHaveLength(1);
  });
});
