import { createLogger } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { createLastUsedTracker } from "./last-used-tracker.ts";

describe("the last-used tracker", () => {
  const logger = createLogger({ name: "test", level: "silent" });

  it("updates a key at most once a minute", () => {
    let now = 0;
    const touched: string[] = [];
    const tracker = createLastUsedTracker({ repository: { touchLastUsed: async (id) => void touched.push(id) }, logger, now: () => now });
    tracker.touch("key_a");
    tracker.touch("key_a");
    tracker.touch("key_b");
    now = 59_999;
    tracker.touch("key_a");
    now = 60_000;
    tracker.touch("key_a");
    expect(touched).toEqual(["key_a", "key_b", "key_a"]);
  });

  it("tries again at the next authentication when the update failed", async () => {
    let calls = 0;
    const tracker = createLastUsedTracker({
      repository: {
        touchLastUsed: async () => {
          if (calls++ === 0) throw new Error("down");
        },
      },
      logger,
      now: () => 0,
    });
    tracker.touch("key_a");
    await new Promise((resolve) => setImmediate(resolve));
    tracker.touch("key_a");
    expect(calls).toBe(2);
  });

  it("remembers at most maxTracked keys: a new key beyond is skipped until older ones are a minute old", () => {
    let now = 0;
    const touched: string[] = [];
    const tracker = createLastUsedTracker({ repository: { touchLastUsed: async (id) => void touched.push(id) }, logger, now: () => now, maxTracked: 3 });
    for (const id of ["key_a", "key_b", "key_c", "key_d"]) tracker.touch(id);
    expect(touched).toEqual(["key_a", "key_b", "key_c"]);
    expect(tracker.tracked).toBe(3);
    now = 60_000;
    tracker.touch("key_d");
    expect(touched).toEqual(["key_a", "key_b", "key_c", "key_d"]);
    expect(tracker.tracked).toBe(1);
  });

  it("runs at most maxInFlight updates at once: a touch beyond is skipped and tried again at the key's next authentication", async () => {
    const finish: Array<() => void> = [];
    const touched: string[] = [];
    const tracker = createLastUsedTracker({
      repository: {
        touchLastUsed: (id) =>
          new Promise<void>((resolve) => {
            touched.push(id);
            finish.push(resolve);
          }),
      },
      logger,
      now: () => 0,
      maxInFlight: 2,
    });
    for (const id of ["key_a", "key_b", "key_c"]) tracker.touch(id);
    expect(touched).toEqual(["key_a", "key_b"]);
    for (const done of finish.splice(0)) done();
    await new Promise((resolve) => setImmediate(resolve));
    tracker.touch("key_c");
    expect(touched).toEqual(["key_a", "key_b", "key_c"]);
  });
});
