import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { requireMerchantId } from "./merchant-id.ts";
import { thrownConnectError } from "./test-support/rpc-error.ts";

function refusal(merchantId: string): string {
  const error = thrownConnectError(() => requireMerchantId(merchantId));
  expect(error.code).toBe(Code.InvalidArgument);
  return error.rawMessage;
}

describe("requireMerchantId", () => {
  it("accepts any non-empty id up to 255 characters without NUL, as it is", () => {
    expect(requireMerchantId("mer_demo")).toBe("mer_demo");
    expect(requireMerchantId("m".repeat(255))).toBe("m".repeat(255));
  });

  it("refuses an empty, an over-long or a NUL-carrying id, naming merchant_id", () => {
    expect(refusal("")).toMatch(/merchant_id.*required/);
    expect(refusal("m".repeat(256))).toMatch(/merchant_id.*too long/);
    expect(refusal("mer_\u0000")).toMatch(/merchant_id.*NUL/);
  });
});
