import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cpuReadings, cpuSeconds, cpuSecondsSince, pidsNamed, totalOf } from "./proc-stats.ts";

/** A pid above Linux's maximum (2^22): never a live process. */
const GONE_PID = 4_194_305;

describe("pidsNamed", () => {
  it("finds this process by its command name, and nothing for a name no process has", () => {
    const ownName = readFileSync("/proc/self/comm", "utf8").trim();
    expect(pidsNamed(ownName)).toContain(process.pid);
    expect(pidsNamed("subdata-no-such")).toEqual([]);
  });
});

describe("cpuSecondsSince", () => {
  it("counts the CPU a process used since its reading, and nothing for one gone meanwhile", () => {
    const before = cpuReadings([[process.pid, process.pid]]);
    // A process that vanished after its reading: its 100 s must not be subtracted.
    before.set(GONE_PID, { pid: GONE_PID, seconds: 100 });
    const started = cpuSeconds(process.pid)!;
    while (cpuSeconds(process.pid)! - started < 0.05) JSON.parse(JSON.stringify({ spin: "x".repeat(1_000) }));
    const used = cpuSecondsSince(before);
    expect(used.has(GONE_PID)).toBe(false);
    expect(used.get(process.pid)).toBeGreaterThanOrEqual(0.05);
    expect(totalOf(used)).toBeGreaterThanOrEqual(0.05);
    expect(totalOf(used)).toBeLessThan(10);
  });
});
