import { describe, expect, it } from "vitest";
import { pgTimestampToProto, timestampToPgText, timestampToRfc3339Millis } from "./time.ts";

describe("time conversions", () => {
  it("keeps microseconds from Postgres text through protobuf and back", () => {
    const timestamp = pgTimestampToProto("2026-11-22 00:11:51.123456+00");
    expect(timestamp.nanos).toBe(123_456_000);
    expect(timestampToPgText(timestamp)).toBe("2026-11-22T00:11:51.123456Z");
  });

  it("renders RFC 3339 UTC with exactly three fractional digits", () => {
    expect(timestampToRfc3339Millis(pgTimestampToProto("2026-11-22 00:11:51+00"))).toBe("2026-11-22T00:11:51.000Z");
    expect(timestampToRfc3339Millis(pgTimestampToProto("2026-11-22 00:11:51.9999+00"))).toBe("2026-11-22T00:11:51.999Z");
  });

  it("refuses text that is not a UTC timestamp", () => {
    expect(() => pgTimestampToProto("2026-11-22 00:11:51+02")).toThrow();
  });
});
