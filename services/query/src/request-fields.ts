// Ids are opaque prefixed text; this only rejects what no writer could have made, before any query.
const ID_BODY = /^[A-Za-z0-9]{1,64}$/;

/** True when `value` looks like an id with this prefix ("sub" for "sub_…"). */
export function isIdWithPrefix(value: string, prefix: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}
