import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  pgJsonTimestampToProto,
  pgTimestampToProto,
  pgTimestampToRfc3339Millis,
  pgTimestampToRfc3339MillisOrNull,
  timestampToPgText,
  timestampToRfc3339Millis,
} from "./time.ts";

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

  it("reads every fraction length, leap days and the ends of the four-digit years", () => {
    const cases: Array<[string, bigint, number]> = [
      ["1970-01-01 00:00:00+00", 0n, 0],
      ["1969-12-31 23:59:59.5+00", -1n, 500_000_000],
      ["2000-02-29 12:00:00.12+00", 951_825_600n, 120_000_000],
      ["2024-12-31 23:59:59.123+00", 1_735_689_599n, 123_000_000],
      ["2026-11-22 00:11:51.1234+00", 1_795_306_311n, 123_400_000],
      ["2026-11-22 00:11:51.12345+00", 1_795_306_311n, 123_450_000],
      ["2026-11-22 00:11:51.000001+00", 1_795_306_311n, 1_000],
      ["0001-01-01 00:00:00+00", -62_135_596_800n, 0],
      ["9999-12-31 23:59:59.999999+00", 253_402_300_799n, 999_999_000],
    ];
    for (const [text, seconds, nanos] of cases) {
      const timestamp = pgTimestampToProto(text);
      expect({ text, seconds: timestamp.seconds, nanos: timestamp.nanos }).toEqual({ text, seconds, nanos });
      expect(timestamp.$typeName).toBe("google.protobuf.Timestamp");
      expect(timestamp).toEqual(create(TimestampSchema, { seconds, nanos }));
    }
  });

  it("formats exactly as Date.toISOString, in and outside the four-digit years", () => {
    const seconds = [0, -1, 951_782_400, 951_868_799, 1_795_306_311, -62_167_219_200, -62_167_219_201, 253_402_300_799, 253_402_300_800];
    for (let day = -800_000; day < 3_000_000; day += 997) seconds.push(day * 86_400 + ((day * 7919) % 86_400));
    for (const value of seconds) {
      for (const nanos of [0, 1_000_000, 999_999_999, 123_456_789]) {
        const timestamp = create(TimestampSchema, { seconds: BigInt(value), nanos });
        expect(timestampToRfc3339Millis(timestamp)).toBe(new Date(value * 1000 + Math.floor(nanos / 1_000_000)).toISOString());
      }
    }
  });

  it("writes Postgres parameter text as Date.toISOString does, with microseconds, in and outside the four-digit years", () => {
    const seconds = [0, -1, 951_782_400, 1_795_306_311, -62_167_219_200, -62_167_219_201, 253_402_300_799, 253_402_300_800];
    for (let day = -800_000; day < 3_000_000; day += 997) seconds.push(day * 86_400 + ((day * 7919) % 86_400));
    for (const value of seconds) {
      for (const nanos of [0, 1_000, 999_999_999, 123_456_789]) {
        const iso = new Date(value * 1000).toISOString();
        const micros = String(Math.floor(nanos / 1000)).padStart(6, "0");
        expect(timestampToPgText(create(TimestampSchema, { seconds: BigInt(value), nanos }))).toBe(`${iso.slice(0, -5)}.${micros}Z`);
      }
    }
  });

  it("reads to_json's timestamptz text as pgTimestampToProto reads the column's", () => {
    for (const date of ["0000-01-01", "1969-12-31", "2000-02-29", "2026-11-22", "9999-12-31"]) {
      for (const fraction of ["", ".5", ".123", ".12345", ".999999", ".000001"]) {
        expect(pgJsonTimestampToProto(`${date}T12:34:56${fraction}+00:00`)).toEqual(pgTimestampToProto(`${date} 12:34:56${fraction}+00`));
      }
    }
    for (const text of [
      "2026-11-22 00:11:51+00",
      "2026-11-22T00:11:51+00",
      "2026-11-22T00:11:51Z",
      "2026-11-22T00:11:51+01:00",
      "2026-11-22T00:11:51.1234567+00:00",
      "",
    ]) {
      expect(() => pgJsonTimestampToProto(text)).toThrow(/unexpected JSON timestamptz text/);
    }
  });

  it("refuses text that is not a UTC timestamp in Postgres' format", () => {
    for (const text of ["2026-11-22T00:11:51Z", "2026-11-22 00:11:51.1234567+00", "2026-11-22 00:11:51.+00", "26-11-22 00:11:51+00", ""]) {
      expect(() => pgTimestampToProto(text)).toThrow(/unexpected timestamptz text/);
    }
  });

  it("slices Postgres text to RFC 3339 milliseconds exactly as the Timestamp path formats it", () => {
    expect(pgTimestampToRfc3339Millis("2026-11-22 00:11:51.123456+00")).toBe("2026-11-22T00:11:51.123Z");
    const texts: string[] = [];
    for (const date of ["0000-01-01", "0001-01-01", "1969-12-31", "1970-01-01", "2000-02-29", "2026-11-22", "9999-12-31"]) {
      for (const time of ["00:00:00", "12:34:56", "23:59:59"]) {
        for (const fraction of ["", ".5", ".12", ".123", ".1234", ".12345", ".999999", ".000001", ".090000"]) {
          texts.push(`${date} ${time}${fraction}+00`);
        }
      }
    }
    for (const text of texts) {
      expect({ text, rfc3339: pgTimestampToRfc3339Millis(text) }).toEqual({ text, rfc3339: timestampToRfc3339Millis(pgTimestampToProto(text)) });
    }
    expect(pgTimestampToRfc3339MillisOrNull(null)).toBeNull();
    expect(pgTimestampToRfc3339MillisOrNull("2026-11-22 00:11:51+00")).toBe("2026-11-22T00:11:51.000Z");
  });

  it("slicing refuses what pgTimestampToProto refuses", () => {
    for (const text of [
      "2026-11-22T00:11:51Z",
      "2026-11-22 00:11:51.1234567+00",
      "2026-11-22 00:11:51.+00",
      "26-11-22 00:11:51+00",
      "2026-11-22 00:11:51+02",
      "infinity",
      "",
    ]) {
      expect(() => pgTimestampToRfc3339Millis(text)).toThrow(/unexpected timestamptz text/);
    }
  });
});
