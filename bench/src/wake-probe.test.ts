import { describe, expect, it } from "vitest";
import { describeWakeProbe, pageRoundTrip, probeWakePenalty } from "./wake-probe.ts";

/** A fake host: work costs 200 µs back to back and 500 µs when it is the first thing after a sleep. */
function fakeHost() {
  let clockMs = 0;
  let cold = false;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => clockMs,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      clockMs += ms;
      cold = true;
    },
    work: () => {
      clockMs += cold ? 0.5 : 0.2;
      cold = false;
    },
  };
}

describe("probeWakePenalty", () => {
  it("times the unit back to back and right after each sleep, and reports medians and their ratio", async () => {
    const host = fakeHost();
    const probe = await probeWakePenalty({ samples: 7, sleepMs: 10, now: host.now, sleep: host.sleep, work: host.work });
    expect(host.sleeps).toEqual(Array(7).fill(10));
    expect(probe.busyMicros).toBeCloseTo(200, 6);
    expect(probe.afterSleepMicros).toBeCloseTo(500, 6);
    expect(probe.slowdown).toBeCloseTo(2.5, 6);
    expect(probe).toMatchObject({ sleepMs: 10, samples: 7 });
  });

  it("does not count the sleep itself in the timed unit", async () => {
    const host = fakeHost();
    const probe = await probeWakePenalty({ samples: 3, sleepMs: 1_000, now: host.now, sleep: host.sleep, work: host.work });
    expect(probe.afterSleepMicros).toBeLessThan(1_000);
  });

  it("describes the probe in one sentence with both figures and the ratio", async () => {
    const text = describeWakeProbe({ busyMicros: 205.4, afterSleepMicros: 497.2, sleepMs: 10, samples: 200, slowdown: 497.2 / 205.4 });
    expect(text).toContain("205 µs back to back");
    expect(text).toContain("497 µs right after a 10 ms sleep (2.4×, medians of 200)");
  });

  it("runs real work: the page round trip returns the page's 50 rows", () => {
    expect(pageRoundTrip()).toBe(50);
  });
});
