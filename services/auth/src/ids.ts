import { randomUUID } from "node:crypto";

/** The same format as subdata_new_id(prefix) in SQL: "prefix_" + 32 hex digits. */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}
