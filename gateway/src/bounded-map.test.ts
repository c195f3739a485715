import { describe, expect, it } from "vitest";
import { createBoundedMap } from "./bounded-map.ts";

describe("the bounded map", () => {
  it("never holds more than its bound, however many keys pass through", () => {
    const map = createBoundedMap<number>(100);
    for (let i = 0; i < 10_000; i++) {
      map.set(`k${i}`, i);
      expect(map.size).toBeLessThanOrEqual(100);
    }
    expect(map.get("k9999")).toBe(9999);
    expect(map.get("k0")).toBeUndefined();
  });

  it("keeps what is used: an entry read within the last half-bound of other keys survives", () => {
    const map = createBoundedMap<string>(4);
    map.set("hot", "h");
    for (let i = 0; i < 100; i++) {
      map.set(`cold${i}`, "c");
      expect(map.get("hot"), `after ${i}`).toBe("h");
    }
    expect(map.get("cold0")).toBeUndefined();
  });

  it("overwrites and deletes in either generation", () => {
    const map = createBoundedMap<number>(4);
    map.set("a", 1);
    map.set("b", 2);
    map.set("c", 3); // a and b are now the previous generation
    map.set("a", 10);
    expect(map.get("a")).toBe(10);
    map.delete("b");
    map.delete("c");
    expect([map.get("b"), map.get("c"), map.size]).toEqual([undefined, undefined, 1]);
  });
});
