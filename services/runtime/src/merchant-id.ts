import { invalidArgument } from "./errors.ts";
import { requireNoNul } from "./postgres-fields.ts";

const MAX_MERCHANT_ID_LENGTH = 255;

/**
 * merchant_id, required on every tenant-scoped request of every service, checked the same way
 * everywhere. Its format is not checked: callers (the gateway, the app) took it from an authenticated
 * key or their own records, and an unknown merchant simply has no data. Bounded, and without NUL, which
 * Postgres text cannot hold.
 */
export function requireMerchantId(merchantId: string): string {
  if (merchantId === "") throw invalidArgument("merchant_id", "is required");
  if (merchantId.length > MAX_MERCHANT_ID_LENGTH) throw invalidArgument("merchant_id", "is too long");
  return requireNoNul("merchant_id", merchantId);
}
