import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { errorDetailOf } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { DEFAULT_GRACE_MICROS, gracePeriodMicros, MAX_GRACE_MICROS } from "./endpoint-service.ts";

const duration = (seconds: bigint, nanos = 0) => create(DurationSchema, { seconds, nanos });

describe("grace period", () => {
  it("defaults to 24 hours when unset", () => {
    expect(gracePeriodMicros(undefined)).toBe(DEFAULT_GRACE_MICROS);
    expect(DEFAULT_GRACE_MICROS).toBe(86_400_000_000n);
  });

  it("accepts 0 to 7 days, keeping microseconds", () => {
    expect(gracePeriodMicros(duration(0n))).toBe(0n);
    expect(gracePeriodMicros(duration(1n, 500_000))).toBe(1_000_500n);
    expect(gracePeriodMicros(duration(7n * 86_400n))).toBe(MAX_GRACE_MICROS);
  });

  it.each([duration(-1n), duration(0n, -1), duration(7n * 86_400n, 1000), duration(30n * 86_400n)])("refuses %o", (grace) => {
    let error: unknown;
    try {
      gracePeriodMicros(grace);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConnectError);
    expect(errorDetailOf(error as ConnectError)?.fieldViolations[0]?.field).toBe("grace_period");
  });
});
