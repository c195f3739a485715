import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

/** CPU time and memory of processes, read from /proc (Linux), for per-process figures per scenario. */

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User + system CPU seconds the process has used so far; undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: fields are counted after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / clockTicks();
  } catch {
    return undefined;
  }
}

/** Processes whose command name (/proc/<pid>/comm) is `name`: e.g. a local nats-server. Empty off Linux. */
export function pidsNamed(name: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry));
  } catch {
    return [];
  }
  return entries
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === name;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Each process's pid and CPU seconds at one moment (undefined for one that is gone), by a key of the caller's. */
export type CpuReadings<Key> = Map<Key, { pid: number; seconds: number | undefined }>;

/** Reads the CPU seconds of each process now; pass the result to cpuSecondsSince later. */
export function cpuReadings<Key>(processes: Iterable<readonly [Key, number]>): CpuReadings<Key> {
  return new Map([...processes].map(([key, pid]) => [key, { pid, seconds: cpuSeconds(pid) }]));
}

/**
 * CPU seconds each process of `before` used since, by key, for those present at both readings only: one
 * gone meanwhile has no second reading, and one started meanwhile is not in `before` (it would count
 * its whole life).
 */
export function cpuSecondsSince<Key>(before: CpuReadings<Key>): Map<Key, number> {
  const used = new Map<Key, number>();
  for (const [key, { pid, seconds: then }] of before) {
    const now = cpuSeconds(pid);
    if (then !== undefined && now !== undefined) used.set(key, now - then);
  }
  return used;
}

/** The sum of a map's values (0 when empty). */
export function totalOf(values: ReadonlyMap<unknown, number>): number {
  let total = 0;
  for (const value of values.values()) total += value;
  return total;
}

function statusField(pid: number, field: "VmHWM" | "VmRSS"): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Peak resident set size in MB since start or since the last resetPeakRss. */
export const peakRssMb = (pid: number) => statusField(pid, "VmHWM");

/** Resets VmHWM to the current RSS (Linux ≥ 4.0), so the next peak belongs to the next scenario. */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    // Not permitted or gone: the peak then covers the process's whole life, which is still a bound.
  }
}

export function loadAverage(): [number, number, number] {
  try {
    const [one, five, fifteen] = readFileSync("/proc/loadavg", "utf8").split(" ").map(Number);
    return [one ?? 0, five ?? 0, fifteen ?? 0];
  } catch {
    return [0, 0, 0];
  }
}
