import { startsWithCalendarDate } from "../calendar-date.ts";

/**
 * Seed timestamps are integers of microseconds since the epoch (safe in a JS number until the year
 * 2255), because Postgres keeps microseconds and the generator deliberately makes rows that share one.
 */
export const MILLISECOND_US = 1_000;
export const SECOND_US = 1_000_000;
export const MINUTE_US = 60 * SECOND_US;
export const HOUR_US = 60 * MINUTE_US;
export const DAY_US = 24 * HOUR_US;

export type PlanInterval = "DAY" | "WEEK" | "MONTH" | "YEAR";

export function dateToMicros(date: Date): number {
  return date.getTime() * 1000;
}

/** RFC 3339 UTC with six fractional digits, which Postgres reads back exactly. */
export function microsToText(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const iso = new Date(millis).toISOString(); // 2024-01-02T03:04:05.123Z
  const rest = micros - millis * 1000;
  return `${iso.slice(0, 23)}${rest < 10 ? "00" : rest < 100 ? "0" : ""}${rest}Z`;
}

/** Parses Postgres timestamptz text or RFC 3339 with up to microsecond precision, exactly. */
export function textToMicros(text: string): number {
  const match = /^(.*?[T ]\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(text.trim());
  if (!match || !startsWithCalendarDate(text.trim())) throw new Error(`not a timestamp: ${text}`);
  const [, base, fraction = "", zone = "Z"] = match;
  const offset = zone === "Z" ? "Z" : zone.length === 3 ? `${zone}:00` : zone.includes(":") ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const millis = Date.parse(`${(base as string).replace(" ", "T")}${offset}`);
  if (Number.isNaN(millis)) throw new Error(`not a timestamp: ${text}`);
  return millis * 1000 + Number(fraction.padEnd(6, "0"));
}

/** The nominal length of count intervals, for choosing ages; billing itself uses addInterval. */
export function nominalIntervalMicros(interval: PlanInterval, count: number): number {
  switch (interval) {
    case "DAY":
      return count * DAY_US;
    case "WEEK":
      return count * 7 * DAY_US;
    case "MONTH":
      return Math.round(count * 30.436875 * DAY_US);
    case "YEAR":
      return Math.round(count * 365.2425 * DAY_US);
  }
}

/**
 * Adds count intervals the way billing does: days and weeks exactly, months and years on the
 * calendar, clamping to the month's last day (Jan 31 + 1 month = Feb 28/29) like Stripe's anchors.
 */
export function addInterval(micros: number, interval: PlanInterval, count: number): number {
  if (interval === "DAY" || interval === "WEEK") return micros + nominalIntervalMicros(interval, count);
  const millis = Math.floor(micros / 1000);
  const rest = micros - millis * 1000;
  const date = new Date(millis);
  const months = interval === "YEAR" ? count * 12 : count;
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const shifted = Date.UTC(
    year,
    month,
    Math.min(date.getUTCDate(), lastDay),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
    date.getUTCMilliseconds(),
  );
  return shifted * 1000 + rest;
}
