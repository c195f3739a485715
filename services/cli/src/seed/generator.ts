import { createIdFactory } from "./ids.ts";
import { generateCustomer, signedUpBefore } from "./customers.ts";
import { generateOrder } from "./orders.ts";
import { generatePlans, type SeedPlan } from "./plans.ts";
import { createRandom } from "./random.ts";
import { SUBSCRIPTION_STATUSES, type CustomerRow, type PlanRow, type SeedBatch, type SubscriptionStatus } from "./rows.ts";
import type { SeedContext } from "./seed-context.ts";
import { generateSubscriptionHistory } from "./subscription-history.ts";
import { DAY_US } from "./time.ts";

export interface SeedGeneratorOptions {
  merchantId: string;
  /** Any text. The same seed, salt and now give the same rows. */
  seed: string;
  /**
   * "" for a merchant without data. Otherwise something no earlier run on this merchant used (the
   * seed command uses the merchant's current row counts), so a re-run makes new ids, not collisions.
   */
  salt: string;
  /** The generator's "now" in microseconds since the epoch: rows are spread over the two years before it. */
  now: number;
  /** The first order number to use (the merchant's current maximum + 1). */
  firstOrderNumber: number;
}

export interface SeedGenerator {
  /** The run's plans (write them before the first batch). */
  readonly plans: readonly PlanRow[];
  /** A time before every row of the run, for a merchant the run creates. */
  readonly merchantCreatedAt: number;
  /** The next `count` subscriptions with their customers, charges, orders and line items. */
  nextBatch(count: number): SeedBatch;
}

const STATUS_WEIGHTS: readonly (readonly [SubscriptionStatus, number])[] = [
  ["ACTIVE", 55],
  ["TRIALING", 8],
  ["PAST_DUE", 7],
  ["PAUSED", 7],
  ["CANCELLED", 15],
  ["EXPIRED", 8],
];
const RETURNING_CUSTOMER_PROBABILITY = 0.2;
const RECENT_CUSTOMERS = 1_000;

/**
 * The pure, deterministic row generator behind `subdata seed` (no I/O). Two PRNG streams: content
 * (seeded by seed + salt) and ids (seed + merchant + salt), so two merchants seeded alike get the
 * same data under different ids, and ids never collide across merchants.
 */
export function createSeedGenerator(options: SeedGeneratorOptions): SeedGenerator {
  const context: SeedContext = {
    random: createRandom(`content\u0000${options.seed}\u0000${options.salt}`),
    newId: createIdFactory(createRandom(`ids\u0000${options.seed}\u0000${options.merchantId}\u0000${options.salt}`)),
    merchantId: options.merchantId,
    now: options.now,
  };
  const plans: SeedPlan[] = generatePlans(context);
  const planChoices = plans.map((plan) => [plan, plan.weight] as const);
  const planById = new Map(plans.map((plan) => [plan.row.id, plan]));
  const merchantCreatedAt = Math.min(...plans.map((plan) => plan.row.createdAt)) - 7 * DAY_US;
  let generated = 0;
  let nextOrderNumber = options.firstOrderNumber;
  let previousCreatedAt: number | null = null;
  const recentCustomers: CustomerRow[] = [];
  const addCustomer = (batch: SeedBatch, customer: CustomerRow, firstSubscriptionAt: number): void => {
    signedUpBefore(context, customer, firstSubscriptionAt);
    batch.customers.push(customer);
    if (recentCustomers.length < RECENT_CUSTOMERS) recentCustomers.push(customer);
    else recentCustomers[context.random.int(0, RECENT_CUSTOMERS - 1)] = customer;
  };

  const nextBatch = (count: number): SeedBatch => {
    const batch: SeedBatch = { customers: [], subscriptions: [], charges: [], orders: [], lineItems: [] };
    for (let i = 0; i < count; i++) {
      // The first six of a run take every status once, so even a tiny seed has them all.
      const status =
        generated < SUBSCRIPTION_STATUSES.length ? (SUBSCRIPTION_STATUSES[generated] as SubscriptionStatus) : context.random.weighted(STATUS_WEIGHTS);
      generated++;
      const plan = context.random.weighted(planChoices);
      // A returning customer is drawn from the recent ones of the whole run (not just this batch), so
      // the rows do not depend on the batch size; one who signed up after this subscription's start
      // cannot be its customer, and a new one is made instead.
      const returning = context.random.chance(RETURNING_CUSTOMER_PROBABILITY) && recentCustomers.length > 0 ? context.random.pick(recentCustomers) : null;
      const customer = returning ?? generateCustomer(context);
      const { subscription, charges } = generateSubscriptionHistory(context, { plan, status, customerId: customer.id, previousCreatedAt });
      if (returning && returning.createdAt > subscription.createdAt) {
        const replacement = generateCustomer(context);
        subscription.customerId = replacement.id;
        addCustomer(batch, replacement, subscription.createdAt);
      } else if (!returning) {
        addCustomer(batch, customer, subscription.createdAt);
      }
      previousCreatedAt = subscription.createdAt;
      batch.subscriptions.push(subscription);
      for (const charge of charges) {
        batch.charges.push(charge);
        if (charge.status === "SUCCEEDED" || charge.status === "REFUNDED" || charge.status === "PARTIALLY_REFUNDED") {
          const { order, lineItems } = generateOrder(context, planById.get(subscription.planId) as SeedPlan, charge);
          charge.orderId = order.id;
          batch.orders.push(order);
          for (const item of lineItems) batch.lineItems.push(item);
        }
      }
    }
    // Order numbers follow creation time within a batch (and increase across batches).
    batch.orders.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const order of batch.orders) order.number = nextOrderNumber++;
    return batch;
  };

  return { plans: plans.map((plan) => plan.row), merchantCreatedAt, nextBatch };
}
