import { EMAIL_DOMAINS, FIRST_NAMES, LAST_NAMES } from "./catalog.ts";
import type { CustomerRow } from "./rows.ts";
import { randomMicros, type SeedContext } from "./seed-context.ts";
import { MINUTE_US } from "./time.ts";

/** Email local parts are ASCII: "Zoë O'Brien" → "zoe.obrien". */
function asciiLocalPart(text: string): string {
  return text
    .normalize("NFD")
    .replace(/[^A-Za-z]/g, "")
    .toLowerCase();
}

/**
 * A new customer. Their created_at is set by signedUpBefore once their first subscription's time is
 * known (the subscription needs the customer's id first).
 */
export function generateCustomer(context: SeedContext): CustomerRow {
  const { random } = context;
  const first = random.pick(FIRST_NAMES);
  const last = random.pick(LAST_NAMES);
  const separator = random.pick([".", "_", ""]);
  const suffix = random.chance(0.6) ? String(random.int(1, 9999)) : "";
  return {
    id: context.newId("cus"),
    merchantId: context.merchantId,
    email: `${asciiLocalPart(first)}${separator}${asciiLocalPart(last)}${suffix}@${random.weighted(EMAIL_DOMAINS)}`,
    name: `${first} ${last}`,
    createdAt: Number.POSITIVE_INFINITY,
  };
}

/** A customer signs up shortly before their earliest subscription. */
export function signedUpBefore(context: SeedContext, customer: CustomerRow, subscriptionAt: number): void {
  if (customer.createdAt > subscriptionAt) customer.createdAt = subscriptionAt - randomMicros(context, 0, 30 * MINUTE_US);
}
