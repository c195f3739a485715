import { createLogger, type Queryable, Registry } from "@subdata/runtime";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createCommitWatcher } from "./commit-watcher.ts";

// The watch against a database that fails: the schedule only (test/feed/commit-watcher.test.ts has the real commits).
describe("the commit watcher's schedule", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function failingDatabase(): { db: Queryable; calls: () => number } {
    let calls = 0;
    const db = {
      query: () => {
        calls++;
        return Promise.reject(new Error("connection refused"));
      },
    } as unknown as Queryable;
    return { db, calls: () => calls };
  }

  it("looks every interval while it works, and backs off while the database fails, counting each failed look", async () => {
    const { db, calls } = failingDatabase();
    const metrics = new Registry();
    const watcher = createCommitWatcher({
      db,
      metrics,
      logger: createLogger({ name: "watch-schedule-test", level: "silent" }),
      intervalMs: 10,
      onCommits: () => {},
      onUnknown: () => {},
    });
    watcher.start();
    await vi.advanceTimersByTimeAsync(10);
    expect(calls()).toBe(1);
    // The first retry comes 125–250 ms later, not after another 10 ms.
    await vi.advanceTimersByTimeAsync(120);
    expect(calls()).toBe(1);
    await vi.advanceTimersByTimeAsync(130);
    expect(calls()).toBe(2);
    // The second retry comes 250–500 ms after the first.
    await vi.advanceTimersByTimeAsync(500);
    expect(calls()).toBe(3);
    const failed = (await metrics.getSingleMetric("subdata_commit_watch_failures_total")?.get())?.values[0]?.value;
    expect(failed).toBe(3);
    await watcher.close();
  });

  it("sends nothing while inactive, and then one statement per look while nothing commits", async () => {
    let active = false;
    const statements: string[] = [];
    let unknown = 0;
    const db = {
      query: (text: string) => {
        statements.push(text);
        // A database where nothing has committed yet.
        return Promise.resolve({ rows: [{ last: "0" }] });
      },
    } as unknown as Queryable;
    const watcher = createCommitWatcher({
      db,
      logger: createLogger({ name: "watch-schedule-test", level: "silent" }),
      intervalMs: 10,
      active: () => active,
      onCommits: () => {},
      onUnknown: () => {
        unknown++;
      },
    });
    watcher.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(statements).toEqual([]);
    // Stopped, not polling the flag: no timer is left.
    expect(vi.getTimerCount()).toBe(0);
    active = true;
    watcher.resume();
    await vi.advanceTimersByTimeAsync(10);
    expect(statements).toHaveLength(1);
    expect(unknown).toBe(1);
    // The sequence has not moved: one statement per look, nothing reported.
    await vi.advanceTimersByTimeAsync(30);
    expect(statements).toHaveLength(4);
    expect(unknown).toBe(1);
    await watcher.close();
  });
});
