import { describe, expect, it } from "vitest";
import { describeWakeProbe, pageRoundTrip, probeWakePenalty, WARM_UNITS } from "./wake-probe.ts";

/**
 * A fake host: work costs `base` ms run again at once and 2.5 × `base` as the first thing after a sleep;
 * `base` grows by `drift` with every sleep (a host slowing down during the probe).
 */
function fakeHost(drift = 0) {
  let clockMs = 0;
  let cold = false;
  let base = 0.2;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => clockMs,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      clockMs += ms;
      base += drift;
      cold = true;
    },
    work: () => {
      clockMs += cold ? 2.5 * base : base;
      cold = false;
    },
  };
}

describe("probeWakePenalty", () => {
  it("times the unit right after each sleep and warm, and reports both medians and their ratio", async () => {
    const host = fakeHost();
    const probe = await probeWakePenalty({ samples: 7, sleepMs: 10, now: host.now, sleep: host.sleep, work: host.work });
    expect(host.sleeps).toEqual(Array(7).fill(10));
    expect(probe.busyMicros).toBeCloseTo(200, 6);
    expect(probe.afterSleepMicros).toBeCloseTo(500, 6);
    expect(probe.slowdown).toBeCloseTo(2.5, 6);
    expect(probe).toMatchObject({ sleepMs: 10, samples: 7 });
  });

  it("keeps the ratio when the host slows down during the probe: each round's cold and warm units see the same host", async () => {
    const host = fakeHost(0.1);
    const probe = await probeWakePenalty({ samples: 9, sleepMs: 10, now: host.now, sleep: host.sleep, work: host.work });
    // The medians drift with the host (base 0.2 → 1.1 ms), the paired ratio does not.
    expect(probe.busyMicros).toBeCloseTo(700, 6);
    expect(probe.slowdown).toBeCloseTo(2.5, 6);
  });

  it("describes the probe in one sentence with both figures and the ratio", () => {
    const text = describeWakeProbe({ busyMicros: 205.4, afterSleepMicros: 497.2, sleepMs: 10, samples: 200, slowdown: 2.43 });
    expect(text).toContain(`took 497 µs right after a 10 ms sleep and 205 µs warm, after ${WARM_UNITS} more at once (2.4×, median over 200 rounds)`);
  });

  it("runs real work: the page round trip returns the page's 50 rows", () => {
    expect(pageRoundTrip()).toBe(50);
  });
});
