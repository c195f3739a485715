import { describe, expect, it } from "vitest";
import { claimBatch, claimWindow } from "./claim-repository.ts";

describe("claimWindow", () => {
  it("is twice the free slots, at most one endpoint's cap, at least 64", () => {
    expect(claimWindow(100, 256)).toBe(200);
    expect(claimWindow(512, 256)).toBe(256);
    expect(claimWindow(10, 256)).toBe(64);
    // A cap below 64 does not shrink the window below it.
    expect(claimWindow(512, 16)).toBe(64);
  });

  it("holds at least two of an endpoint's claim batches when the slots are free", () => {
    for (const cap of [64, 128, 256, 500]) expect(claimWindow(2 * cap, cap)).toBeGreaterThanOrEqual(2 * claimBatch(cap));
  });
});
