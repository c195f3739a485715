import { create } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";

// Postgres sends timestamptz as text like "2026-11-22 00:11:51.123456+00" (sessions run in UTC).
const PG_TIMESTAMPTZ = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\+00$/;

/**
 * Converts Postgres timestamptz text to a protobuf Timestamp without losing microseconds (a JS Date
 * would). Throws on anything that is not a UTC timestamp, which would be a bug in the session setup.
 */
export function pgTimestampToProto(text: string): Timestamp {
  const match = PG_TIMESTAMPTZ.exec(text);
  if (!match) throw new Error(`unexpected timestamptz text: ${JSON.stringify(text)}`);
  const [, year, month, day, hour, minute, second, fraction = ""] = match;
  const millis = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second));
  return create(TimestampSchema, {
    seconds: BigInt(millis / 1000),
    nanos: Number(fraction.padEnd(9, "0")),
  });
}

/** Like pgTimestampToProto, for nullable columns. */
export function pgTimestampToProtoOrUndefined(text: string | null): Timestamp | undefined {
  return text === null ? undefined : pgTimestampToProto(text);
}

/** A Timestamp as RFC 3339 UTC with exactly three fractional digits: "2026-11-22T00:11:51.123Z". */
export function timestampToRfc3339Millis(timestamp: Timestamp): string {
  return new Date(Number(timestamp.seconds) * 1000 + Math.floor(timestamp.nanos / 1_000_000)).toISOString();
}

/** A Timestamp as text Postgres accepts exactly, microseconds included, for query parameters. */
export function timestampToPgText(timestamp: Timestamp): string {
  const whole = new Date(Number(timestamp.seconds) * 1000).toISOString().slice(0, 19);
  const micros = String(Math.floor(timestamp.nanos / 1000)).padStart(6, "0");
  return `${whole}.${micros}Z`;
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
