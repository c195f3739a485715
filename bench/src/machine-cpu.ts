import { readFileSync } from "node:fs";

/** Whole-machine CPU counters from /proc/stat, to tell how busy all cores were during a run. */
export interface MachineCpu {
  busy: number;
  total: number;
}

export function machineCpu(): MachineCpu {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    const total = values.slice(0, 8).reduce((sum, value) => sum + value, 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** Busy share of all cores between two readings, in cores (0 to the core count); NaN without readings. */
export function busyCores(before: MachineCpu, after: MachineCpu, cores: number): number {
  const total = after.total - before.total;
  return total > 0 ? ((after.busy - before.busy) / total) * cores : Number.NaN;
}
