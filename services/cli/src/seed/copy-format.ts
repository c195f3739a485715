import { microsToText } from "./time.ts";

/** Postgres COPY text format: tab-separated, \N for NULL, backslash escapes for \\ \t \n \r. */

const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };

export function copyText(value: string | null): string {
  if (value === null) return "\\N";
  return NEEDS_ESCAPE.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c] as string) : value;
}

export function copyTime(micros: number | null): string {
  return micros === null ? "\\N" : microsToText(micros);
}

export function copyNumber(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`not a safe integer: ${value}`);
  return String(value);
}
