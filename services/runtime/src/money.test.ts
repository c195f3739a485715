import { create } from "@bufbuild/protobuf";
import { MoneySchema } from "@subdata/proto/subdata/common/v1/money_pb";
import { describe, expect, it } from "vitest";
import { formatMinorUnits, minorUnitDigits, renderMoney } from "./money.ts";

describe("money", () => {
  it.each([
    [1999n, "USD", "19.99"],
    [5n, "USD", "0.05"],
    [0n, "EUR", "0.00"],
    [1500n, "JPY", "1500"],
    [1250n, "KWD", "1.250"],
    [7n, "KWD", "0.007"],
    [-1999n, "GBP", "-19.99"],
    [123456789012345678n, "USD", "1234567890123456.78"],
  ])("formats %s %s as %s with the currency's ISO 4217 digits", (minor, currency, expected) => {
    expect(formatMinorUnits(minor, currency)).toBe(expected);
  });

  it("takes digits from ISO 4217 data", () => {
    expect(minorUnitDigits("JPY")).toBe(0);
    expect(minorUnitDigits("USD")).toBe(2);
    expect(minorUnitDigits("KWD")).toBe(3);
  });

  it("refuses a currency ISO does not know instead of guessing digits", () => {
    expect(() => formatMinorUnits(100n, "XYZ")).toThrow(/unknown ISO 4217/);
  });

  it("never renders money without its currency", () => {
    expect(() => renderMoney(undefined)).toThrow();
    expect(() => renderMoney(create(MoneySchema, { amountMinor: 5n, currencyCode: "" }))).toThrow();
    expect(renderMoney(create(MoneySchema, { amountMinor: 1250n, currencyCode: "KWD" }))).toEqual({ amount: "1.250", currency: "KWD" });
  });
});
