import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { pidsNamed } from "./proc-stats.ts";

describe("pidsNamed", () => {
  it("finds this process by its command name, and nothing for a name no process has", () => {
    const ownName = readFileSync("/proc/self/comm", "utf8").trim();
    expect(pidsNamed(ownName)).toContain(process.pid);
    expect(pidsNamed("subdata-no-such")).toEqual([]);
  });
});
