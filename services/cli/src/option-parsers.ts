import { create } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { minorUnitDigits } from "@subdata/runtime";
import { calendarDayMs } from "./calendar-date.ts";
import { CliError } from "./cli-error.ts";

// The option values several commands take (counts, durations, times), each with one grammar and one
// message wherever it is typed. A refusal is a CliError naming the option and echoing the text. Nothing
// is trimmed: " 5" and "5 " are refused alike, since a stray space is likelier a mistake than a meaning.

/** Digits only (no sign, exponent, decimal point or space), from min to max. */
export function parseWholeNumber(text: string, option: string, { min, max }: { min: number; max: number }): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new CliError(`${option} must be a whole number from ${min.toLocaleString("en-US")} to ${max.toLocaleString("en-US")}, got "${text}"`);
  }
  return value;
}

export const DURATION_UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
export type DurationUnit = keyof typeof DURATION_UNIT_MS;

const ALL_UNITS = Object.keys(DURATION_UNIT_MS) as DurationUnit[];
const EXAMPLES: Record<DurationUnit, string> = { s: "45s", m: "90m", h: "12h", d: "7d", w: "2w" };

export interface DurationLimits {
  /** The units accepted; all of s, m, h, d and w unless narrowed. */
  units?: readonly DurationUnit[];
  /** Whether a zero duration is accepted. */
  allowZero?: boolean;
  /** The longest duration accepted, in milliseconds. */
  maxMs: number;
  /** Why there is a limit, shown after it when a duration exceeds it. */
  maxReason?: string;
}

/** maxMs as the message shows it: in the largest of d, h, m, s that counts it whole ("36500d", "7d"). */
export function durationText(ms: number): string {
  const unit = (["d", "h", "m", "s"] as const).find((candidate) => ms % DURATION_UNIT_MS[candidate] === 0) ?? "s";
  return `${Math.floor(ms / DURATION_UNIT_MS[unit])}${unit}`;
}

/** "90m", "12h", "7d", "2w" → milliseconds: digits, then one unit, nothing else. */
export function parseDuration(text: string, option: string, { units = ALL_UNITS, allowZero = false, maxMs, maxReason }: DurationLimits): number {
  const match = /^(\d+)([a-z])$/.exec(text);
  const unit = match ? units.find((candidate) => candidate === match[2]) : undefined;
  if (!match || unit === undefined || (!allowZero && Number(match[1]) === 0)) {
    const unitList = `${units.slice(0, -1).join(", ")}${units.length > 1 ? " or " : ""}${units.at(-1)}`;
    const examples = [...(allowZero ? [`0${units[0]}`] : []), ...units.map((each) => EXAMPLES[each])].join(", ");
    throw new CliError(`${option} must be a ${allowZero ? "" : "positive "}whole number with a unit ${unitList} (e.g. ${examples}), got "${text}"`);
  }
  // A long run of digits makes Infinity, which the limit refuses like any other duration past it.
  const ms = Number(match[1]) * DURATION_UNIT_MS[unit];
  if (ms > maxMs) throw new CliError(`${option} must be at most ${durationText(maxMs)}${maxReason ? ` (${maxReason})` : ""}, got "${text}"`);
  return ms;
}

// RFC 3339 date-time with the offset required (without one, a time is some machine's local time), hour
// 00–23 (Date.parse reads T24:00 as the next day), no leap second, at most nanoseconds.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt]([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(?:\.(\d{1,9}))?(?:[Zz]|([+-])([01]\d|2[0-3]):([0-5]\d))$/;

/** "2025-06-01T12:00:00Z", "2025-06-01T14:00:00.5+02:00" → the instant, exactly; on a real calendar day. */
export function parseRfc3339(text: string, option: string): Timestamp {
  const match = RFC3339.exec(text);
  const dayMs = match ? calendarDayMs(Number(match[1]), Number(match[2]), Number(match[3])) : undefined;
  if (!match || dayMs === undefined) {
    throw new CliError(`${option} must be an RFC 3339 time with an offset, such as 2025-06-01T12:00:00Z, got "${text}"`);
  }
  const [, , , , hour, minute, second, fraction = "", sign, offsetHours = "0", offsetMinutes = "0"] = match;
  const offsetSeconds = (sign === "-" ? -1 : 1) * (Number(offsetHours) * 3_600 + Number(offsetMinutes) * 60);
  const seconds = dayMs / 1_000 + Number(hour) * 3_600 + Number(minute) * 60 + Number(second) - offsetSeconds;
  return create(TimestampSchema, { seconds: BigInt(seconds), nanos: Number(fraction.padEnd(9, "0")) });
}

/** An amount of money as typed, before its currency is known: "12.50" → whole "12", fraction "50". */
export interface DecimalAmount {
  text: string;
  whole: string;
  fraction: string;
}

/**
 * Digits with an optional decimal point and more digits ("12", "12.5", "0.05"): no sign, exponent,
 * grouping or space. How many decimals the currency allows is judged later, by toMinorUnits, once the
 * charge or order says which currency it is.
 */
export function parseDecimal(text: string, option: string, { allowZero }: { allowZero: boolean }): DecimalAmount {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new CliError(`${option} must be a decimal amount such as 12.50 (digits, at most one decimal point), got "${text}"`);
  const [, whole = "", fraction = ""] = match;
  if (!allowZero && /^0*$/.test(whole + fraction)) throw new CliError(`${option} must be more than 0, got "${text}"`);
  return { text, whole, fraction };
}

/**
 * The amount in the currency's minor units, exactly ("12.5" USD → 1250n, "1500" JPY → 1500n). Digits
 * past the currency's own must be zeros ("12.500" USD is 12.50; "12.505" is refused). The caller
 * judges the size, against what is left to refund or what a bigint column holds.
 */
export function toMinorUnits(amount: DecimalAmount, currency: string, option: string): bigint {
  const digits = minorUnitDigits(currency);
  if (/[^0]/.test(amount.fraction.slice(digits))) {
    const rule = digits === 0 ? "be a whole amount" : `have at most ${digits} decimal place${digits === 1 ? "" : "s"}`;
    throw new CliError(`${option} must ${rule} in ${currency}, got "${amount.text}"`);
  }
  return BigInt(amount.whole + amount.fraction.slice(0, digits).padEnd(digits, "0"));
}
