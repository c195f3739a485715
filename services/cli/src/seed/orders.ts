import { CURRENCIES } from "./catalog.ts";
import type { ChargeRow, LineItemRow, OrderRow, OrderStatus } from "./rows.ts";
import type { SeedPlan } from "./plans.ts";
import { randomMicros, type SeedContext } from "./seed-context.ts";
import { DAY_US, HOUR_US, MILLISECOND_US, SECOND_US } from "./time.ts";

export interface SeedOrder {
  order: OrderRow;
  lineItems: LineItemRow[];
}

const LINE_QUANTITIES = [1, 1, 2, 3] as const;

/**
 * The order a paid charge produced (the box that shipped), in the charge's currency. Its total is the
 * charge amount and it adds up: subtotal − discount + shipping + tax = total (tax included in the
 * price, as VAT is), and the line items' totals (quantity × unit price) sum to the subtotal.
 * number is 0 here: the generator numbers a batch's orders in created_at order.
 */
export function generateOrder(context: SeedContext, plan: SeedPlan, charge: ChargeRow): SeedOrder {
  const { random, now } = context;
  if (charge.processedAt === null) throw new Error("an order needs a processed charge");
  const currency = CURRENCIES[charge.currency];
  const createdAt = Math.min(charge.processedAt + randomMicros(context, MILLISECOND_US, 3 * SECOND_US), now);
  const status: OrderStatus =
    charge.status === "REFUNDED"
      ? random.chance(0.7)
        ? "REFUNDED"
        : "CANCELLED"
      : charge.status === "PARTIALLY_REFUNDED"
        ? "FULFILLED"
        : now - createdAt < 3 * DAY_US
          ? random.chance(0.7)
            ? "PAID"
            : "FULFILLED"
          : random.chance(0.97)
            ? "FULFILLED"
            : "PAID";
  const updatedAt = status === "PAID" ? createdAt : Math.min(createdAt + randomMicros(context, HOUR_US, 5 * DAY_US), now);

  const totalMinor = charge.amountMinor;
  const taxMinor = Math.round((totalMinor * currency.taxRate) / (1 + currency.taxRate));
  const shippingMinor = random.chance(0.35) && totalMinor - taxMinor > 3 * currency.shipping ? currency.shipping : 0;
  const netMinor = totalMinor - taxMinor - shippingMinor;
  const subtotalMinor = random.chance(0.2) ? Math.round(netMinor / 0.9) : netMinor;
  const discountMinor = subtotalMinor - netMinor;

  const orderId = context.newId("ord");
  const order: OrderRow = {
    id: orderId,
    merchantId: context.merchantId,
    subscriptionId: charge.subscriptionId,
    chargeId: charge.id,
    number: 0,
    status,
    currency: charge.currency,
    subtotalMinor,
    discountMinor,
    shippingMinor,
    taxMinor,
    totalMinor,
    createdAt,
    updatedAt,
  };
  return { order, lineItems: splitIntoLineItems(context, plan, orderId, subtotalMinor) };
}

/** Splits the subtotal over 1–3 distinct items; the last line (quantity 1) absorbs rounding. */
function splitIntoLineItems(context: SeedContext, plan: SeedPlan, orderId: string, subtotalMinor: number): LineItemRow[] {
  const { random } = context;
  const items = plan.product.items;
  const count = random.int(1, Math.min(3, items.length));
  const start = random.int(0, items.length - 1);
  const weights = Array.from({ length: count }, () => random.between(1, 3));
  const weightSum = weights.reduce((sum, weight) => sum + weight, 0);
  const lines: LineItemRow[] = [];
  let allocated = 0;
  for (let i = 0; i < count; i++) {
    const [skuSuffix, title] = items[(start + i) % items.length] as readonly [string, string];
    const isLast = i === count - 1;
    const share = isLast ? subtotalMinor - allocated : Math.floor((subtotalMinor * (weights[i] as number)) / weightSum);
    let quantity: number = isLast ? 1 : random.pick(LINE_QUANTITIES);
    let unitPriceMinor = Math.floor(share / quantity);
    if (unitPriceMinor === 0) {
      quantity = 1;
      unitPriceMinor = share;
    }
    const totalMinor = unitPriceMinor * quantity;
    allocated += totalMinor;
    lines.push({
      orderId,
      position: i + 1,
      merchantId: context.merchantId,
      sku: `${plan.product.sku}-${skuSuffix}`,
      title,
      quantity,
      unitPriceMinor,
      totalMinor,
    });
  }
  return lines;
}
