import { describe, expect, it } from "vitest";
import { medianOfEach } from "./stats.ts";

describe("medianOfEach", () => {
  it("takes each key's median over the records, skipping records that lack the key", () => {
    const medians = medianOfEach<string>([
      { gateway: 500, query: 700 },
      { gateway: 600, query: 900, auth: 200 },
      { gateway: 550, query: 800 },
    ]);
    expect(medians).toEqual({ gateway: 550, query: 800, auth: 200 });
  });

  it("gives NaN for a key no record measured", () => {
    expect(medianOfEach<string>([{ postgres: Number.NaN }]).postgres).toBeNaN();
  });
});
