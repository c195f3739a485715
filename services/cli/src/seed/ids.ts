import type { Random } from "./random.ts";

/** Makes ids in the format of SQL's subdata_new_id(prefix): prefix + "_" + 32 lowercase hex digits. */
export type IdFactory = (prefix: string) => string;

export function createIdFactory(random: Random): IdFactory {
  const hex8 = (): string => random.uint32().toString(16).padStart(8, "0");
  return (prefix) => `${prefix}_${hex8()}${hex8()}${hex8()}${hex8()}`;
}
