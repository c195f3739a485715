import { timestampDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.ts";
import { durationText, parseDecimal, parseDuration, parseRfc3339, parseWholeNumber, toMinorUnits } from "./option-parsers.ts";

const DAY_MS = 86_400_000;

/** The CliError `parse` throws (failing when it throws nothing or something else). */
function refusal(parse: () => unknown): CliError {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return error as CliError;
  }
  throw new Error("expected a refusal, got a value");
}

describe("parseWholeNumber", () => {
  it("takes digits from min to max, leading zeros included", () => {
    expect(parseWholeNumber("1", "--limit", { min: 1, max: 10 })).toBe(1);
    expect(parseWholeNumber("10", "--limit", { min: 1, max: 10 })).toBe(10);
    expect(parseWholeNumber("007", "--limit", { min: 1, max: 10 })).toBe(7);
  });

  it.each(["0", "11", "", " 5", "5 ", "+5", "-1", "1.0", "1e1", "0x5", "5n", "٥", "99999999999999999999999"])(
    "refuses %j, naming the option and the range",
    (text) => {
      expect(refusal(() => parseWholeNumber(text, "--limit", { min: 1, max: 10 })).message).toBe(
        `--limit must be a whole number from 1 to 10, got ${JSON.stringify(text)}`,
      );
    },
  );

  it("groups the thousands of the range in its message", () => {
    expect(refusal(() => parseWholeNumber("0", "--subscriptions", { min: 1, max: 10_000_000 })).message).toMatch(/from 1 to 10,000,000,/);
  });
});

describe("parseDuration", () => {
  const limits = { maxMs: 36_500 * DAY_MS };

  it("reads digits and one unit of s, m, h, d or w", () => {
    expect(parseDuration("45s", "--x", limits)).toBe(45_000);
    expect(parseDuration("90m", "--x", limits)).toBe(5_400_000);
    expect(parseDuration("12h", "--x", limits)).toBe(43_200_000);
    expect(parseDuration("30d", "--x", limits)).toBe(30 * DAY_MS);
    expect(parseDuration("2w", "--x", limits)).toBe(14 * DAY_MS);
  });

  it.each([" 2h", "2h ", "2 h", "2H", "2", "h", "", "1.5h", "-5m", "+5m", "5y", "5ms", "2h30m", "0x5s"])("refuses %j, naming the option", (text) => {
    expect(refusal(() => parseDuration(text, "--grace", { ...limits, allowZero: true })).message).toBe(
      `--grace must be a whole number with a unit s, m, h, d or w (e.g. 0s, 45s, 90m, 12h, 7d, 2w), got ${JSON.stringify(text)}`,
    );
  });

  it("refuses zero unless allowed", () => {
    expect(refusal(() => parseDuration("0d", "--expires-in", limits)).message).toMatch(/^--expires-in must be a positive whole number with a unit/);
    expect(refusal(() => parseDuration("000s", "--expires-in", limits)).message).toMatch(/^--expires-in must be a positive/);
    expect(parseDuration("0s", "--grace", { ...limits, allowZero: true })).toBe(0);
  });

  it("takes the limit itself, refuses past it in the largest whole unit, with the reason, also for endless digits", () => {
    const expiry = { maxMs: 36_500 * DAY_MS, maxReason: "about 100 years" };
    expect(parseDuration("36500d", "--expires-in", expiry)).toBe(36_500 * DAY_MS);
    expect(parseDuration("5214w", "--expires-in", expiry)).toBe(5_214 * 7 * DAY_MS);
    for (const text of ["36501d", "5215w", "999999w", `${"9".repeat(400)}s`]) {
      expect(refusal(() => parseDuration(text, "--expires-in", expiry)).message).toBe(`--expires-in must be at most 36500d (about 100 years), got "${text}"`);
    }
    expect(refusal(() => parseDuration("8d", "--grace", { maxMs: 7 * DAY_MS, allowZero: true })).message).toBe('--grace must be at most 7d, got "8d"');
  });

  it("takes only the units asked for", () => {
    const hoursAndDays = { units: ["h", "d"] as const, maxMs: 10 * DAY_MS };
    expect(parseDuration("3d", "--x", hoursAndDays)).toBe(3 * DAY_MS);
    expect(refusal(() => parseDuration("1w", "--x", hoursAndDays)).message).toBe(
      '--x must be a positive whole number with a unit h or d (e.g. 12h, 7d), got "1w"',
    );
  });

  it("shows a limit in the largest unit that counts it whole", () => {
    expect(durationText(36_500 * DAY_MS)).toBe("36500d");
    expect(durationText(7 * DAY_MS)).toBe("7d");
    expect(durationText(90 * 60_000)).toBe("90m");
    expect(durationText(1_500)).toBe("1s");
  });
});

describe("parseRfc3339", () => {
  const at = (text: string) => timestampDate(parseRfc3339(text, "--since")).toISOString();

  it("reads UTC and offset times as the same instant", () => {
    expect(at("2025-06-01T12:00:00Z")).toBe("2025-06-01T12:00:00.000Z");
    expect(at("2025-06-01t14:00:00+02:00")).toBe("2025-06-01T12:00:00.000Z");
    expect(at("2025-06-01T00:30:00-11:30")).toBe("2025-06-01T12:00:00.000Z");
    expect(at("2024-02-29T23:59:59z")).toBe("2024-02-29T23:59:59.000Z");
  });

  it("keeps the fraction exactly, to the nanosecond", () => {
    expect(parseRfc3339("2025-06-01T12:00:00.000089Z", "--now")).toMatchObject({ seconds: 1_748_779_200n, nanos: 89_000 });
    expect(parseRfc3339("2025-06-01T12:00:00.123456789+00:00", "--now")).toMatchObject({ seconds: 1_748_779_200n, nanos: 123_456_789 });
    expect(parseRfc3339("1969-12-31T23:59:59.5Z", "--now")).toMatchObject({ seconds: -1n, nanos: 500_000_000 });
  });

  it("reads the years 0–99 as such, not as 1900–1999", () => {
    expect(at("0001-01-01T00:00:00Z")).toBe("0001-01-01T00:00:00.000Z");
    expect(at("0099-12-31T23:59:59Z")).toBe("0099-12-31T23:59:59.000Z");
  });

  it.each([
    "2025-06-01T12:00:00", // no offset: some machine's local time
    "2025-06-01 12:00:00Z",
    " 2025-06-01T12:00:00Z",
    "2025-06-01T12:00:00Z ",
    "2025-06-01T24:00:00Z",
    "2025-06-01T12:60:00Z",
    "2025-06-01T23:59:60Z",
    "2025-06-01T12:00:00+24:00",
    "2025-06-01T12:00:00+0200",
    "2025-06-01T12:00:00.Z",
    "2025-06-01T12:00:00.1234567890Z",
    "2026-02-29T00:00:00Z", // not a leap year
    "2026-02-30T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "+275760-09-13T00:00:00Z",
    "2025-06-01",
    "1748779200",
    "",
  ])("refuses %j, naming the option", (text) => {
    expect(refusal(() => parseRfc3339(text, "--now")).message).toBe(
      `--now must be an RFC 3339 time with an offset, such as 2025-06-01T12:00:00Z, got ${JSON.stringify(text)}`,
    );
  });
});

describe("parseDecimal and toMinorUnits", () => {
  const minor = (text: string, currency: string) => toMinorUnits(parseDecimal(text, "--amount", { allowZero: true }), currency, "--amount");

  it("reads digits with at most one decimal point, exactly, in the currency's minor units", () => {
    expect(minor("12.5", "USD")).toBe(1250n);
    expect(minor("12", "USD")).toBe(1200n);
    expect(minor("0.05", "EUR")).toBe(5n);
    expect(minor("007.10", "USD")).toBe(710n);
    expect(minor("1500", "JPY")).toBe(1500n);
    expect(minor("1.25", "KWD")).toBe(1250n);
    // Beyond a bigint, exactly: the caller judges the size.
    expect(minor("99999999999999999999999.99", "USD")).toBe(9999999999999999999999999n);
  });

  it("takes zeros past the currency's digits, and refuses anything else there", () => {
    expect(minor("12.500", "USD")).toBe(1250n);
    expect(minor("1500.00", "JPY")).toBe(1500n);
    expect(refusal(() => minor("12.505", "USD")).message).toBe('--amount must have at most 2 decimal places in USD, got "12.505"');
    expect(refusal(() => minor("0.0001", "KWD")).message).toBe('--amount must have at most 3 decimal places in KWD, got "0.0001"');
    expect(refusal(() => minor("10.5", "JPY")).message).toBe('--amount must be a whole amount in JPY, got "10.5"');
  });

  it.each(["", " 1", "1 ", "+1", "-1", "1.", ".5", "1.2.3", "1,50", "1e2", "0x10", "NaN", "Infinity", "١", "1_000"])(
    "refuses %j, naming the option",
    (text) => {
      expect(refusal(() => parseDecimal(text, "--unit-price", { allowZero: true })).message).toBe(
        `--unit-price must be a decimal amount such as 12.50 (digits, at most one decimal point), got ${JSON.stringify(text)}`,
      );
    },
  );

  it("refuses zero unless allowed", () => {
    for (const text of ["0", "000", "0.00"]) {
      expect(refusal(() => parseDecimal(text, "--amount", { allowZero: false })).message).toBe(`--amount must be more than 0, got "${text}"`);
      expect(parseDecimal(text, "--unit-price", { allowZero: true })).toMatchObject({ text });
    }
  });
});
