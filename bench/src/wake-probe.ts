import { setTimeout as sleep } from "node:timers/promises";
import { median } from "./stats.ts";

/**
 * How much slower this host runs the same work right after a process slept than right after itself.
 *
 * Why the bench asks: a page through the gateway path wakes three Node processes and two Postgres
 * backends in turn, the baseline one of each. On some virtual machines (a Firecracker guest:
 * docs/benchmarks.md, "Work after a sleep costs more") code that runs right after a sleep runs about
 * twice as slow as the same code run again at once. At low load every request pays that in each
 * process it wakes; a saturated run hardly does. Without this figure, CPU per request at one connection
 * or paced, and figures from two hosts, cannot be read. The ratio is not a pure cost of waking: caches
 * also cool while anything else runs (spinning 10 ms instead of sleeping already gave 1.6× there).
 *
 * The unit is a JSON round trip of a 50-row page-shaped object: allocation, strings and property
 * access like a page's rendering, no I/O. Each sample is a round: a sleep, the unit once (cold), then
 * WARM_UNITS more back to back, the last TIMED_WARM_UNITS of them timed (warm: on the Firecracker host
 * the unit needed ~20 repetitions, ~2.5 ms of work, to reach its steady speed after a sleep, so the
 * unit right after the cold one is not yet the speed a saturated process runs at). The ratio is the
 * median over the rounds of cold ÷ warm, so a host that speeds up or slows down during the probe (they
 * do) moves both parts of a round alike.
 */
export interface WakeProbe {
  /** The unit's median wall time warm (the rounds' medians of their last timed units), µs. */
  busyMicros: number;
  /** The unit's median wall time right after each sleep of `sleepMs` (each round's first), µs. */
  afterSleepMicros: number;
  sleepMs: number;
  /** Rounds timed. */
  samples: number;
  /** The median over the rounds of (right after the sleep ÷ warm). */
  slowdown: number;
}
export interface WakeProbeOptions {
  samples: number;
  sleepMs: number;
  /** Injected by tests; default performance.now, timers/promises setTimeout and the page round trip. */
  now?: () => number;
  sleep?: (ms: number) => Promise<unknown>;
  work?: () => unknown;
}

const PAGE = Array.from({ length: 50 }, (_, index) => ({
  id: `sub_${index.toString(16).padStart(32, "0")}`,
  object: "subscription",
  status: "active",
  customer_id: `cus_${index}`,
  amount: { value: "19.90", currency: "EUR" },
  current_period_end: "2026-12-01T00:00:00.000000Z",
  metadata: { plan: "monthly", seat: index },
}));

/** One unit of work: a JSON round trip of the page; returns something so it is not optimised away. */
export function pageRoundTrip(): number {
  return (JSON.parse(JSON.stringify({ object: "list", data: PAGE })) as { data: unknown[] }).data.length;
}

/** Units run back to back after each round's cold one; the last TIMED_WARM_UNITS are its warm figure. */
export const WARM_UNITS = 40;
const TIMED_WARM_UNITS = 10;

export async function probeWakePenalty(options: WakeProbeOptions): Promise<WakeProbe> {
  const now = options.now ?? (() => performance.now());
  const pause = options.sleep ?? ((ms: number) => sleep(ms));
  const work = options.work ?? pageRoundTrip;
  const timed = () => {
    const started = now();
    work();
    return (now() - started) * 1000;
  };
  // The code paths, the allocator and the caches are hot before the first round.
  for (let index = 0; index < 200; index++) work();
  const afterSleep: number[] = [];
  const busy: number[] = [];
  const ratios: number[] = [];
  for (let index = 0; index < options.samples; index++) {
    await pause(options.sleepMs);
    const cold = timed();
    const warmTimes: number[] = [];
    for (let unit = 0; unit < WARM_UNITS; unit++) {
      if (unit < WARM_UNITS - TIMED_WARM_UNITS) work();
      else warmTimes.push(timed());
    }
    const warm = median(warmTimes);
    afterSleep.push(cold);
    busy.push(warm);
    ratios.push(cold / warm);
  }
  return { busyMicros: median(busy), afterSleepMicros: median(afterSleep), sleepMs: options.sleepMs, samples: options.samples, slowdown: median(ratios) };
}

/** One sentence for the report's header. */
export function describeWakeProbe(probe: WakeProbe): string {
  const us = (value: number) => `${Math.round(value).toLocaleString("en")} µs`;
  return (
    `Host probe (before the bench started its stack): a fixed unit of work (JSON round trip of a 50-row page) took ${us(probe.afterSleepMicros)} right after a ` +
    `${probe.sleepMs} ms sleep and ${us(probe.busyMicros)} warm, after ${WARM_UNITS} more at once (${probe.slowdown.toFixed(1)}×, median over ${probe.samples} rounds); ` +
    "at low load a request pays the first kind in every process it wakes."
  );
}
