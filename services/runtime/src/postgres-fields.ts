import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "./errors.ts";

/**
 * Checks for request fields that go into SQL. Postgres refuses some values a protobuf field can hold;
 * without these the statement fails late and the caller gets INTERNAL for its own mistake.
 */

/** Postgres text cannot hold NUL ("invalid byte sequence … 0x00"): refuse it naming the field. */
export function requireNoNul(field: string, value: string): string {
  if (value.includes("\u0000")) throw invalidArgument(field, "must not contain NUL");
  return value;
}

// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the range google.protobuf.Timestamp documents, which
// Postgres timestamptz and JS Date both hold (Postgres has no year 0; timestampToPgText writes 4 digits).
const MIN_SECONDS = -62_135_596_800n;
const MAX_SECONDS = 253_402_300_799n;
const MAX_NANOS = 999_999_999;

/** A Timestamp field as google.protobuf.Timestamp defines it: years 1–9999, nanos 0–999,999,999. */
export function requireTimestampInRange(field: string, timestamp: Timestamp): Timestamp {
  if (timestamp.seconds < MIN_SECONDS || timestamp.seconds > MAX_SECONDS) {
    throw invalidArgument(field, "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z");
  }
  if (!Number.isInteger(timestamp.nanos) || timestamp.nanos < 0 || timestamp.nanos > MAX_NANOS) {
    throw invalidArgument(field, "nanos must be between 0 and 999999999");
  }
  return timestamp;
}
