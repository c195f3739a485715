import currencyCodes from "currency-codes";
import type { Money } from "@subdata/proto/subdata/common/v1/money_pb";

/** Money as the public API and webhooks carry it: a decimal string with the currency's ISO 4217 digits. */
export interface PublicMoney {
  amount: string;
  currency: string;
}

/**
 * The number of minor-unit digits of an ISO 4217 currency ("JPY" → 0, "USD" → 2, "KWD" → 3), from the
 * currency-codes package (ISO's own list) plus the few codes it lacks, not a hand-typed table. Throws
 * for a code ISO does not know: emitting an amount with guessed digits would misstate money.
 */
export function minorUnitDigits(currencyCode: string): number {
  const digits = DIGITS_BY_CODE.get(currencyCode) ?? DIGITS_BY_CODE.get(currencyCode.toUpperCase());
  if (digits === undefined) throw new Error(`unknown ISO 4217 currency ${JSON.stringify(currencyCode)}`);
  return digits;
}

/**
 * ISO 4217 codes that currency-codes 2.2.0 (its latest release) does not list, with ISO's minor units:
 * XCG, the Caribbean guilder that replaced ANG in 2025, and three withdrawn codes that stored rows and
 * Node's ICU still know (HRK → EUR in 2023, SLL → SLE, ZWL → ZWG in 2024). money.test.ts renders every
 * currency ICU knows and fails when currency-codes gains one of these, so the list only shrinks.
 */
const ISO_4217_NOT_IN_CURRENCY_CODES: ReadonlyArray<readonly [string, number]> = [
  ["XCG", 2],
  ["HRK", 2],
  ["SLL", 2],
  ["ZWL", 2],
];

/** currency-codes' list keyed by code: its code() scans the whole list on every call (every money field rendered). */
const DIGITS_BY_CODE: ReadonlyMap<string, number> = new Map([
  ...currencyCodes.data.map((record) => [record.code, record.digits] as const),
  ...ISO_4217_NOT_IN_CURRENCY_CODES,
]);

/** Integer minor units → exact decimal string ("1999" USD → "19.99", "1500" JPY → "1500", "1250" KWD → "1.250"). */
export function formatMinorUnits(amountMinor: bigint, currencyCode: string): string {
  const digits = minorUnitDigits(currencyCode);
  const negative = amountMinor < 0n;
  const magnitude = (negative ? -amountMinor : amountMinor).toString();
  if (digits === 0) return negative ? `-${magnitude}` : magnitude;
  const padded = magnitude.padStart(digits + 1, "0");
  const text = `${padded.slice(0, -digits)}.${padded.slice(-digits)}`;
  return negative ? `-${text}` : text;
}

/** A Money message as public JSON. A Money without a currency is a bug upstream, never rendered bare. */
export function renderMoney(money: Money | undefined): PublicMoney {
  if (!money?.currencyCode) throw new Error("money without a currency");
  return { amount: formatMinorUnits(money.amountMinor, money.currencyCode), currency: money.currencyCode };
}
