import { create } from "@bufbuild/protobuf";
import { MoneySchema } from "@subdata/proto/subdata/common/v1/money_pb";
import currencyCodes from "currency-codes";
import { describe, expect, it } from "vitest";
import { formatMinorUnits, minorUnitDigits, renderMoney } from "./money.ts";

/**
 * Where ISO 4217's minor units (what the API renders, and what stored amounts are counted in) differ
 * from ICU's digits (CLDR's, for display: COP and IDR shown without cents, XDR with two).
 */
const ISO_DIGITS_WHERE_ICU_DIFFERS: Readonly<Record<string, number>> = {
  AFN: 2,
  ALL: 2,
  COP: 2,
  HUF: 2,
  IDR: 2,
  IQD: 3,
  IRR: 2,
  KPW: 2,
  LAK: 2,
  LBP: 2,
  MGA: 2,
  MMK: 2,
  PKR: 2,
  SLL: 2,
  SOS: 2,
  SYP: 2,
  XDR: 0,
  XSU: 0,
  YER: 2,
};

const icuDigits = (code: string) => new Intl.NumberFormat("en", { style: "currency", currency: code }).resolvedOptions().maximumFractionDigits;

describe("every currency Node's ICU knows", () => {
  const icuCurrencies = Intl.supportedValuesOf("currency");

  it("renders, with ISO 4217's minor units (ICU's digits but for the table of differences)", () => {
    const wrong = icuCurrencies.flatMap((code) => {
      const expected = ISO_DIGITS_WHERE_ICU_DIFFERS[code] ?? icuDigits(code);
      try {
        const digits = minorUnitDigits(code);
        const text = formatMinorUnits(1_234_567n, code);
        const wanted = expected === 0 ? "1234567" : `${"1234567".slice(0, -expected)}.${"1234567".slice(-expected)}`;
        return digits === expected && text === wanted ? [] : [`${code}: ${digits} digits, ${text}; expected ${expected}, ${wanted}`];
      } catch (error) {
        return [`${code}: ${(error as Error).message}`];
      }
    });
    expect(icuCurrencies.length).toBeGreaterThan(150);
    expect(wrong).toEqual([]);
  });

  it("every difference in the table is still one: ICU has not come round to ISO's digits", () => {
    const stale = Object.entries(ISO_DIGITS_WHERE_ICU_DIFFERS).filter(([code, digits]) => icuCurrencies.includes(code) && icuDigits(code) === digits);
    expect(stale).toEqual([]);
  });

  it("only XCG and three withdrawn codes come from money.ts's own additions; currency-codes has every other", () => {
    const known = new Set(currencyCodes.data.map((record) => record.code));
    expect(icuCurrencies.filter((code) => !known.has(code))).toEqual(["HRK", "SLL", "XCG", "ZWL"]);
  });

  it("renders the Caribbean guilder (XCG, since 2025) like any two-digit currency", () => {
    expect(renderMoney(create(MoneySchema, { amountMinor: 123_456n, currencyCode: "XCG" }))).toEqual({ amount: "1234.56", currency: "XCG" });
  });
});

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
