import { describe, expect, it } from "vitest";
import { addInterval, microsToText, textToMicros } from "./time.ts";

describe("seed time helpers", () => {
  it("round-trips microseconds through text, as Postgres writes it too", () => {
    expect(microsToText(textToMicros("2025-03-04T05:06:07.000089Z"))).toBe("2025-03-04T05:06:07.000089Z");
    expect(textToMicros("2025-03-04 05:06:07.123456+00")).toBe(textToMicros("2025-03-04T05:06:07.123456Z"));
    expect(textToMicros("2025-03-04T06:06:07+01:00")).toBe(textToMicros("2025-03-04T05:06:07Z"));
  });

  it("adds calendar months clamped to the month's end, keeping the time and microseconds", () => {
    const start = textToMicros("2024-01-31T10:00:00.123456Z");
    expect(microsToText(addInterval(start, "MONTH", 1))).toBe("2024-02-29T10:00:00.123456Z");
    expect(microsToText(addInterval(start, "YEAR", 1))).toBe("2025-01-31T10:00:00.123456Z");
    expect(microsToText(addInterval(start, "WEEK", 2))).toBe("2024-02-14T10:00:00.123456Z");
  });
});
