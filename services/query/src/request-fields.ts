import { invalidArgument, requireNoNul } from "@subdata/runtime";

// Ids are opaque prefixed text; this only rejects what no writer could have made, before any query.
const ID_BODY = /^[A-Za-z0-9]{1,64}$/;
const MAX_MERCHANT_ID_LENGTH = 255;

/** True when `value` looks like an id with this prefix ("sub" for "sub_…"). */
export function isIdWithPrefix(value: string, prefix: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}

/**
 * merchant_id is required on every tenant-scoped request. Its format is not checked: the caller (the
 * gateway) took it from an authenticated key, and an unknown merchant simply has no data.
 */
export function requireMerchantId(merchantId: string): string {
  if (merchantId === "") throw invalidArgument("merchant_id", "is required");
  if (merchantId.length > MAX_MERCHANT_ID_LENGTH) throw invalidArgument("merchant_id", "is too long");
  // Not a format check: Postgres text cannot hold NUL, and the query would fail as INTERNAL.
  return requireNoNul("merchant_id", merchantId);
}
