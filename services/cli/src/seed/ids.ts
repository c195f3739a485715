import type { Random } from "./random.ts";

/** Makes ids in the format of SQL's subdata_new_id(prefix): prefix + "_" + 32 lowercase hex digits. */
export type IdFactory = (prefix: string) => string;

// Seeding makes millions of ids: a byte-to-hex table is several times faster than toString(16) + pad.
const HEX_BYTE = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

function hex32(value: number): string {
  return (
    (HEX_BYTE[value >>> 24] as string) +
    (HEX_BYTE[(value >>> 16) & 0xff] as string) +
    (HEX_BYTE[(value >>> 8) & 0xff] as string) +
    (HEX_BYTE[value & 0xff] as string)
  );
}

export function createIdFactory(random: Random): IdFactory {
  return (prefix) => `${prefix}_${hex32(random.uint32())}${hex32(random.uint32())}${hex32(random.uint32())}${hex32(random.uint32())}`;
}
