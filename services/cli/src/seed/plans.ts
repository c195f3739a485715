import { CURRENCIES, INTERVAL_OPTIONS, PLAN_CURRENCIES, PRODUCTS, type Currency, type Product } from "./catalog.ts";
import type { PlanRow } from "./rows.ts";
import { randomMicros, type SeedContext } from "./seed-context.ts";
import { DAY_US } from "./time.ts";

export interface SeedPlan {
  row: PlanRow;
  product: Product;
  /** How often subscriptions pick this plan, relative to the others. */
  weight: number;
}

const CURRENCY_WEIGHT: Record<Currency, number> = { USD: 4, EUR: 2.5, GBP: 1.5, JPY: 1, KWD: 0.6, CAD: 1, AUD: 1 };

/** Rounds to what a merchant would charge: x.99 in cent currencies, round yen, quarter dinars. */
function nicePrice(raw: number, currency: Currency): number {
  const digits = CURRENCIES[currency].digits;
  if (digits === 0) return Math.max(100, Math.round(raw / 100) * 100);
  if (digits === 3) return Math.max(250, Math.round(raw / 250) * 250);
  return Math.max(99, Math.round(raw / 100) * 100 - 1);
}

/**
 * A run's plans: the first eight cover every billing option (DAY, WEEK, MONTH, YEAR) and the first five
 * every required currency (USD, EUR, GBP, JPY with 0 decimals, KWD with 3). Created before any
 * subscription can be.
 */
export function generatePlans(context: SeedContext, count = PLAN_CURRENCIES.length): SeedPlan[] {
  const { random } = context;
  const plans: SeedPlan[] = [];
  for (let i = 0; i < count; i++) {
    const option = INTERVAL_OPTIONS[i % INTERVAL_OPTIONS.length] as (typeof INTERVAL_OPTIONS)[number];
    const currency = PLAN_CURRENCIES[i % PLAN_CURRENCIES.length] as Currency;
    const product = random.pick(PRODUCTS);
    const prices = CURRENCIES[currency].prices;
    const box = prices[random.int(0, prices.length - 1)] as number;
    // Longer commitments cost more in total and a little less per box.
    const boxes = option.interval === "YEAR" ? 12 * option.count : option.interval === "MONTH" ? option.count : 1;
    const discount = boxes >= 12 ? 0.8 : boxes >= 3 ? 0.92 : 1;
    const priceMinor = boxes === 1 ? box : nicePrice(box * boxes * discount, currency);
    plans.push({
      row: {
        id: context.newId("plan"),
        merchantId: context.merchantId,
        name: `${product.name} ${option.label}`,
        interval: option.interval,
        intervalCount: option.count,
        priceMinor,
        currency,
        createdAt: context.now - 740 * DAY_US - randomMicros(context, 0, 60 * DAY_US),
      },
      product,
      weight: option.weight * CURRENCY_WEIGHT[currency],
    });
  }
  return plans;
}
