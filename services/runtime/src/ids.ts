import { randomUUID } from "node:crypto";

/**
 * Row ids: "prefix_" + 32 lowercase hex digits, the format of subdata_new_id(prefix) in SQL. Readers
 * accept any alphanumeric body of up to 64 characters, so ids made by other writers stay addressable;
 * anything else cannot name a row and is answered without a query.
 */
const ID_BODY = /^[A-Za-z0-9]{1,64}$/;

/** A new id in the format of subdata_new_id(prefix). */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}

/** True when `value` could be an id with this prefix ("sub" for "sub_…"). */
export function isIdWithPrefix(value: string, prefix: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}
