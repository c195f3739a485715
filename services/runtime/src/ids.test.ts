import { describe, expect, it } from "vitest";
import { isIdWithPrefix, newId } from "./ids.ts";

describe("ids", () => {
  it("makes ids in the format of subdata_new_id and recognises them", () => {
    const id = newId("we");
    expect(id).toMatch(/^we_[0-9a-f]{32}$/);
    expect(isIdWithPrefix(id, "we")).toBe(true);
    expect(newId("we")).not.toBe(id);
  });

  it("refuses another prefix, an empty or over-long body, and anything but alphanumerics after the prefix", () => {
    for (const value of ["whd_abc", "we_", `we_${"a".repeat(65)}`, "we_abc_def", "we_ab-c", "we_abc\u0000", "we"]) {
      expect(isIdWithPrefix(value, "we"), value).toBe(false);
    }
    expect(isIdWithPrefix(`we_${"A1".repeat(32)}`, "we")).toBe(true);
  });
});
