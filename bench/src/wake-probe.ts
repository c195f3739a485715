import { setTimeout as sleep } from "node:timers/promises";
import { median } from "./stats.ts";

/**
 * How much slower this host runs the same work right after a process slept than back to back.
 *
 * Why the bench asks: a page through the gateway path wakes three Node processes and two Postgres
 * backends in turn, the baseline one of each. On some virtual machines (seen on a Firecracker guest,
 * docs/benchmarks.md "Work after a sleep costs more") code that runs right after its vCPU idled runs
 * 2–3× slower than the same code back to back, so at low load every request pays that once per process
 * it crosses, while a saturated run hardly does. Without this figure, CPU per request at one connection
 * or paced, and figures across hosts, cannot be read.
 *
 * The unit is a JSON round trip of a 50-row page-shaped object: allocation, strings and property
 * access like a page's rendering, no I/O.
 */
export interface WakeProbe {
  /** The unit's median wall time back to back, µs. */
  busyMicros: number;
  /** The unit's median wall time right after each sleep of `sleepMs`, µs. */
  afterSleepMicros: number;
  sleepMs: number;
  samples: number;
  /** afterSleepMicros ÷ busyMicros. */
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

export async function probeWakePenalty(options: WakeProbeOptions): Promise<WakeProbe> {
  const now = options.now ?? (() => performance.now());
  const pause = options.sleep ?? ((ms: number) => sleep(ms));
  const work = options.work ?? pageRoundTrip;
  const timed = () => {
    const started = now();
    work();
    return (now() - started) * 1000;
  };
  // Optimised code for both phases, so only the sleep differs.
  for (let index = 0; index < Math.max(50, options.samples); index++) work();
  const busy: number[] = [];
  for (let index = 0; index < options.samples; index++) busy.push(timed());
  const afterSleep: number[] = [];
  for (let index = 0; index < options.samples; index++) {
    await pause(options.sleepMs);
    afterSleep.push(timed());
  }
  const busyMicros = median(busy);
  const afterSleepMicros = median(afterSleep);
  return { busyMicros, afterSleepMicros, sleepMs: options.sleepMs, samples: options.samples, slowdown: afterSleepMicros / busyMicros };
}

/** One sentence for the report's header. */
export function describeWakeProbe(probe: WakeProbe): string {
  const us = (value: number) => `${Math.round(value).toLocaleString("en")} µs`;
  return (
    `Host probe (idle machine, before the stack started): a fixed unit of work (JSON round trip of a 50-row page) took ${us(probe.busyMicros)} back to back ` +
    `and ${us(probe.afterSleepMicros)} right after a ${probe.sleepMs} ms sleep (${probe.slowdown.toFixed(1)}×, medians of ${probe.samples}); ` +
    "the higher that ratio, the more a request costs at low load for every process it wakes."
  );
}
