import { randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

/**
 * API keys as GitHub makes tokens: "sds_" + 32 random base62 characters + a 6-character base62 CRC32 of
 * everything before it. The prefix makes a leaked key recognisable by secret scanners; the checksum lets
 * us refuse a mistyped or invented key without touching the database. Pure: no I/O besides randomness.
 */

const API_KEY_PREFIX = "sds_";
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
export const API_KEY_LENGTH = API_KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH;
/** "sds_" + 4 characters: enough to tell keys apart in a list, far too little to guess the rest. */
const DISPLAY_PREFIX_LENGTH = 8;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
// Bytes at or above 248 (= 4 × 62) are thrown away so that byte % 62 is uniform.
const UNBIASED_BYTE_LIMIT = 248;
const SHAPE = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

export type RandomSource = (size: number) => Buffer;

/** A new key. `random` is injectable for tests; it defaults to the CSPRNG. */
export function generateApiKey(random: RandomSource = randomBytes): string {
  let body = "";
  while (body.length < RANDOM_LENGTH) {
    for (const byte of random(RANDOM_LENGTH)) {
      if (byte >= UNBIASED_BYTE_LIMIT) continue;
      body += BASE62[byte % 62];
      if (body.length === RANDOM_LENGTH) break;
    }
  }
  const unchecked = API_KEY_PREFIX + body;
  return unchecked + checksumOf(unchecked);
}

/** CRC32 of `text` in base62, left-padded with "0" to 6 characters (2^32 < 62^6). */
export function checksumOf(text: string): string {
  let value = crc32(text);
  let digits = "";
  do {
    digits = BASE62[value % 62] + digits;
    value = Math.floor(value / 62);
  } while (value > 0);
  return digits.padStart(CHECKSUM_LENGTH, "0");
}

/** True when `key` has the right shape and its last 6 characters are the checksum of the rest. */
export function verifyChecksum(key: string): boolean {
  if (!SHAPE.test(key)) return false;
  const split = key.length - CHECKSUM_LENGTH;
  return checksumOf(key.slice(0, split)) === key.slice(split);
}

export type ParsedApiKey =
  | { ok: true; key: string; displayPrefix: string }
  /** displayPrefix is only given for a well-shaped key (safe to log); null for arbitrary input. */
  | { ok: false; problem: "malformed" | "bad_checksum"; displayPrefix: string | null };

/** Checks a presented key offline: shape first, then checksum. */
export function parseApiKey(presented: string): ParsedApiKey {
  // Length first: the presented value is attacker-sized.
  if (presented.length !== API_KEY_LENGTH || !SHAPE.test(presented)) return { ok: false, problem: "malformed", displayPrefix: null };
  const displayPrefix = displayPrefixOf(presented);
  if (!verifyChecksum(presented)) return { ok: false, problem: "bad_checksum", displayPrefix };
  return { ok: true, key: presented, displayPrefix };
}

export function displayPrefixOf(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}
