import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { errorDetailOf } from "./errors.ts";
import { requireNoNul, requireTimestampInRange } from "./postgres-fields.ts";
import { thrownConnectError } from "./test-support/rpc-error.ts";
import { timestampToPgText } from "./time.ts";

function expectFieldViolation(check: () => unknown, field: string): void {
  const error = thrownConnectError(check);
  expect(error.code).toBe(Code.InvalidArgument);
  expect(error.rawMessage).toMatch(new RegExp(`^${field.replace(".", "\\.")}: `));
  expect(errorDetailOf(error)?.fieldViolations.map((violation) => violation.field)).toEqual([field]);
}

const at = (seconds: bigint, nanos = 0) => create(TimestampSchema, { seconds, nanos });

describe("requireNoNul", () => {
  it.each(["", "merchant", "tab\there", "ünïcödé 🎉", "\u0001\u007f"])("keeps %j", (value) => {
    expect(requireNoNul("name", value)).toBe(value);
  });

  it.each(["\u0000", "a\u0000", "\u0000b", "mer_\u0000x"])("refuses %j with INVALID_ARGUMENT naming the field", (value) => {
    expectFieldViolation(() => requireNoNul("endpoint.description", value), "endpoint.description");
  });
});

describe("requireTimestampInRange", () => {
  it("keeps the first and last instants of years 1–9999, which Postgres stores as they are", () => {
    const first = at(-62_135_596_800n);
    const last = at(253_402_300_799n, 999_999_999);
    expect(requireTimestampInRange("start_time", first)).toBe(first);
    expect(requireTimestampInRange("start_time", last)).toBe(last);
    expect(timestampToPgText(first)).toBe("0001-01-01T00:00:00.000000Z");
    expect(timestampToPgText(last)).toBe("9999-12-31T23:59:59.999999Z");
  });

  it.each([
    ["the last second of year 0", -62_135_596_801n],
    ["year 10000", 253_402_300_800n],
    ["past what a JS Date holds", 10n ** 15n],
    ["the int64 minimum", -(2n ** 63n)],
    ["the int64 maximum", 2n ** 63n - 1n],
  ])("refuses %s", (_, seconds) => {
    expectFieldViolation(() => requireTimestampInRange("expires_at", at(seconds)), "expires_at");
  });

  it.each([-1, 1_000_000_000, 2_147_483_647, -2_147_483_648])("refuses nanos %i", (nanos) => {
    expectFieldViolation(() => requireTimestampInRange("occurred_at", at(0n, nanos)), "occurred_at");
  });
});
