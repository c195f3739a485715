import { create } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";

// Postgres sends timestamptz as text like "2026-11-22 00:11:51.123456+00" (sessions run in UTC).
const PG_TIMESTAMPTZ = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\+00$/;
// to_json writes a UTC timestamptz as "2026-11-22T00:11:51.123456+00:00".
const PG_JSON_TIMESTAMPTZ = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\+00:00$/;

/**
 * Converts Postgres timestamptz text to a protobuf Timestamp without losing microseconds (a JS Date
 * would). Throws on anything that is not a UTC timestamp, which would be a bug in the session setup.
 * Runs for every timestamp of every page: the regex only validates, the fields are read at their
 * fixed positions, and the message is built as the plain object create() would return.
 */
export function pgTimestampToProto(text: string): Timestamp {
  if (!PG_TIMESTAMPTZ.test(text)) throw new Error(`unexpected timestamptz text: ${JSON.stringify(text)}`);
  return validatedTimestamp(text, text.length - 3);
}

/**
 * Like pgTimestampToProto, for a timestamptz inside JSON that Postgres rendered (to_json, jsonb):
 * "2026-11-22T00:11:51.123456+00:00". Every snapshot field of every change event passes here.
 */
export function pgJsonTimestampToProto(text: string): Timestamp {
  if (!PG_JSON_TIMESTAMPTZ.test(text)) throw new Error(`unexpected JSON timestamptz text: ${JSON.stringify(text)}`);
  return validatedTimestamp(text, text.length - 6);
}

/** The Timestamp of validated "YYYY-MM-DD?HH:MM:SS[.f{1,6}]" text whose fraction (if any) ends at `fractionEnd`. */
function validatedTimestamp(text: string, fractionEnd: number): Timestamp {
  const days = daysFromCivil(digits(text, 0, 4), digits(text, 5, 7), digits(text, 8, 10));
  const seconds = days * 86_400 + digits(text, 11, 13) * 3600 + digits(text, 14, 16) * 60 + digits(text, 17, 19);
  // Scale the fraction's digits to nanoseconds.
  let nanos = 0;
  if (fractionEnd > 19) nanos = digits(text, 20, fractionEnd) * NANOS_SCALE[fractionEnd - 20]!;
  return { $typeName: "google.protobuf.Timestamp", seconds: BigInt(seconds), nanos };
}

/** 10^(9 - n): turns n fractional digits into nanoseconds. */
const NANOS_SCALE = [1e9, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3];

/** The decimal number in text[start, end), which the caller has validated as ASCII digits. */
function digits(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + (text.charCodeAt(i) - 48);
  return value;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/**
 * Postgres timestamptz text as RFC 3339 UTC with exactly three fractional digits, by slicing:
 * "2026-11-22 00:11:51.123456+00" → "2026-11-22T00:11:51.123Z" (the fraction truncated, as
 * timestampToRfc3339Millis(pgTimestampToProto(text)) does, with no Timestamp in between). Accepts and
 * refuses exactly what pgTimestampToProto does.
 */
export function pgTimestampToRfc3339Millis(text: string): string {
  if (!PG_TIMESTAMPTZ.test(text)) throw new Error(`unexpected timestamptz text: ${JSON.stringify(text)}`);
  const fractionEnd = text.length - 3;
  // Six fractional digits is what Postgres sends for all but whole seconds, or trailing zeros trimmed.
  const millis = fractionEnd >= 23 ? text.slice(20, 23) : fractionEnd > 19 ? text.slice(20, fractionEnd).padEnd(3, "0") : "000";
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${millis}Z`;
}

/** Like pgTimestampToRfc3339Millis, for nullable columns. */
export function pgTimestampToRfc3339MillisOrNull(text: string | null): string | null {
  return text === null ? null : pgTimestampToRfc3339Millis(text);
}

/** Like pgTimestampToProto, for nullable columns. */
export function pgTimestampToProtoOrUndefined(text: string | null): Timestamp | undefined {
  return text === null ? undefined : pgTimestampToProto(text);
}

/**
 * A Timestamp as RFC 3339 UTC with exactly three fractional digits: "2026-11-22T00:11:51.123Z".
 * Runs for every timestamp the gateway renders, so it formats with arithmetic instead of allocating a
 * Date; years outside 0000–9999 (which toISOString writes as ±YYYYYY) still go through Date.
 */
export function timestampToRfc3339Millis(timestamp: Timestamp): string {
  return `${wholeSecondsText(Number(timestamp.seconds))}.${THREE_DIGITS[Math.floor(timestamp.nanos / 1_000_000)]}Z`;
}

/**
 * "YYYY-MM-DDTHH:MM:SS" of seconds since 1970-01-01 UTC: by arithmetic in the years 0000–9999, else as
 * Date.toISOString writes the time (±YYYYYY years).
 */
function wholeSecondsText(seconds: number): string {
  const days = Math.floor(seconds / 86_400);
  if (days < MIN_FOUR_DIGIT_DAY || days > MAX_FOUR_DIGIT_DAY || !Number.isInteger(days)) {
    return new Date(seconds * 1000).toISOString().slice(0, -5);
  }
  const secondOfDay = seconds - days * 86_400;
  const [year, month, day] = civilFromDays(days);
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor((secondOfDay % 3600) / 60);
  return `${String(year).padStart(4, "0")}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hour]}:${TWO_DIGITS[minute]}:${TWO_DIGITS[secondOfDay % 60]}`;
}

/** 0000-01-01 and 9999-12-31 as days since 1970-01-01. */
const MIN_FOUR_DIGIT_DAY = -719_528;
const MAX_FOUR_DIGIT_DAY = 2_932_896;
const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, "0"));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, "0"));

/** [year, month, day] of days since 1970-01-01 (H. Hinnant's civil_from_days). */
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  return [yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day];
}

/**
 * A Timestamp as text Postgres accepts exactly, microseconds included, for query parameters:
 * "2026-11-22T00:11:51.123456Z". Every ingested event's time passes here, so it formats as
 * timestampToRfc3339Millis does; years outside 0000–9999 go through Date.
 */
export function timestampToPgText(timestamp: Timestamp): string {
  return `${wholeSecondsText(Number(timestamp.seconds))}.${String(Math.floor(timestamp.nanos / 1000)).padStart(6, "0")}Z`;
}

/** A JS Date as a protobuf Timestamp (millisecond precision, for times made in JS). */
export function dateToTimestamp(date: Date): Timestamp {
  const millis = date.getTime();
  return create(TimestampSchema, {
    seconds: BigInt(Math.floor(millis / 1000)),
    nanos: (((millis % 1000) + 1000) % 1000) * 1_000_000,
  });
}

/** A protobuf Timestamp as a JS Date (millisecond precision). */
export function timestampToDate(timestamp: Timestamp): Date {
  return new Date(Number(timestamp.seconds) * 1000 + Math.floor(timestamp.nanos / 1_000_000));
}
