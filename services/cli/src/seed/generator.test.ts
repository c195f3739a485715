import { describe, expect, it } from "vitest";
import { CURRENCIES } from "./catalog.ts";
import { createSeedGenerator, type SeedGeneratorOptions } from "./generator.ts";
import { CHARGE_STATUSES, ORDER_STATUSES, SUBSCRIPTION_STATUSES, type LineItemRow, type SeedBatch, type SubscriptionRow } from "./rows.ts";
import { DAY_US, textToMicros } from "./time.ts";

const NOW = textToMicros("2026-06-15T12:00:00.000000Z");
const options: SeedGeneratorOptions = { merchantId: "mer_unit", seed: "unit-test", salt: "", now: NOW, firstOrderNumber: 1 };

function generate(overrides: Partial<SeedGeneratorOptions> = {}, batches = [400, 400]) {
  const generator = createSeedGenerator({ ...options, ...overrides });
  const all: SeedBatch = { customers: [], subscriptions: [], charges: [], orders: [], lineItems: [] };
  for (const size of batches) {
    const batch = generator.nextBatch(size);
    for (const key of Object.keys(all) as (keyof SeedBatch)[]) (all[key] as unknown[]).push(...batch[key]);
  }
  return { plans: generator.plans, merchantCreatedAt: generator.merchantCreatedAt, ...all };
}

/** Everything but ids (and the foreign keys that are ids). */
function content(data: ReturnType<typeof generate>) {
  const strip = (row: object) => Object.fromEntries(Object.entries(row).filter(([key]) => key !== "id" && !key.endsWith("Id")));
  return {
    plans: data.plans.map(strip),
    customers: data.customers.map(strip),
    subscriptions: data.subscriptions.map(strip),
    charges: data.charges.map(strip),
    orders: data.orders.map(strip),
    lineItems: data.lineItems.map(strip),
  };
}

describe("the seed generator", () => {
  const data = generate();
  const subscriptionsById = new Map(data.subscriptions.map((s) => [s.id, s]));

  it("makes the same rows, ids included, from the same seed, salt and now", () => {
    expect(generate()).toEqual(data);
  });

  it("does not depend on how the run is cut into batches, except for order numbers", () => {
    const other = generate({}, [100, 300, 400]);
    expect(other.subscriptions).toEqual(data.subscriptions);
    expect(other.charges).toEqual(data.charges);
  });

  it("gives another merchant the same content under different ids", () => {
    const other = generate({ merchantId: "mer_other" });
    expect(content(other)).toEqual(content(data));
    const ids = new Set(data.subscriptions.map((s) => s.id));
    expect(other.subscriptions.some((s) => ids.has(s.id))).toBe(false);
  });

  it("makes different ids and content with another salt or seed", () => {
    for (const other of [generate({ salt: "1/12/800/2000/1500" }), generate({ seed: "another" })]) {
      const ids = new Set(data.subscriptions.map((s) => s.id));
      expect(other.subscriptions.some((s) => ids.has(s.id))).toBe(false);
      expect(other.customers.map((c) => c.email)).not.toEqual(data.customers.map((c) => c.email));
    }
  });

  it("makes ids in the SQL format, all distinct", () => {
    const ids = [
      ...data.plans.map((r) => [r.id, "plan"] as const),
      ...data.customers.map((r) => [r.id, "cus"] as const),
      ...data.subscriptions.map((r) => [r.id, "sub"] as const),
      ...data.charges.map((r) => [r.id, "ch"] as const),
      ...data.orders.map((r) => [r.id, "ord"] as const),
    ];
    for (const [id, prefix] of ids) expect(id).toMatch(new RegExp(`^${prefix}_[0-9a-f]{32}$`));
    expect(new Set(ids.map(([id]) => id)).size).toBe(ids.length);
  });

  it("covers every status, interval and required currency", () => {
    expect(new Set(data.subscriptions.map((s) => s.status))).toEqual(new Set(SUBSCRIPTION_STATUSES));
    expect(new Set(data.charges.map((c) => c.status))).toEqual(new Set(CHARGE_STATUSES));
    expect(new Set(data.orders.map((o) => o.status))).toEqual(new Set(ORDER_STATUSES));
    expect(new Set(data.plans.map((p) => p.interval))).toEqual(new Set(["DAY", "WEEK", "MONTH", "YEAR"]));
    const currencies = new Set(data.subscriptions.map((s) => s.currency));
    for (const currency of ["USD", "EUR", "GBP", "JPY", "KWD"]) expect(currencies).toContain(currency);
  });

  it("has every status even in a run of six", () => {
    const tiny = createSeedGenerator(options).nextBatch(6);
    expect(new Set(tiny.subscriptions.map((s) => s.status))).toEqual(new Set(SUBSCRIPTION_STATUSES));
  });

  it("spreads created_at over about two years, with some exact ties", () => {
    const created = data.subscriptions.map((s) => s.createdAt);
    expect(Math.max(...created)).toBeLessThanOrEqual(NOW);
    expect(NOW - Math.min(...created)).toBeGreaterThan(600 * DAY_US);
    expect(NOW - Math.min(...created)).toBeLessThan(800 * DAY_US);
    expect(new Set(created).size).toBeLessThan(created.length);
  });

  it("keeps each subscription's timestamps consistent with its status", () => {
    const checks: Record<SubscriptionRow["status"], (s: SubscriptionRow) => void> = {
      TRIALING: (s) => {
        expect(s.trialEndsAt).toBeGreaterThan(NOW);
        expect(s.nextChargeAt).toBe(s.trialEndsAt);
      },
      ACTIVE: (s) => {
        expect(s.currentPeriodStart).toBeLessThanOrEqual(NOW);
        expect(s.currentPeriodEnd).toBeGreaterThan(NOW);
        expect(s.nextChargeAt).toBe(s.currentPeriodEnd);
      },
      PAST_DUE: (s) => expect(s.nextChargeAt).toBeGreaterThan(NOW),
      PAUSED: (s) => {
        expect(s.pausedAt).not.toBeNull();
        expect(s.pausedAt).toBeGreaterThanOrEqual(s.currentPeriodStart);
        expect(s.pausedAt).toBeLessThanOrEqual(NOW);
        expect(s.nextChargeAt).toBeNull();
      },
      CANCELLED: (s) => {
        expect(s.cancelledAt).toBeGreaterThan(s.createdAt);
        expect(s.cancelledAt).toBeLessThanOrEqual(NOW);
        expect(s.cancellationReason).toBeTruthy();
        expect(s.nextChargeAt).toBeNull();
      },
      EXPIRED: (s) => {
        expect(s.currentPeriodEnd).toBeLessThanOrEqual(NOW);
        expect(s.nextChargeAt).toBeNull();
      },
    };
    for (const s of data.subscriptions) {
      checks[s.status](s);
      if (s.status !== "PAUSED") expect(s.pausedAt).toBeNull();
      if (s.status !== "CANCELLED") expect([s.cancelledAt, s.cancellationReason]).toEqual([null, null]);
      expect(s.currentPeriodStart).toBeLessThan(s.currentPeriodEnd);
      expect(s.currentPeriodStart).toBeGreaterThanOrEqual(s.createdAt);
      expect(s.updatedAt).toBeGreaterThanOrEqual(s.createdAt);
      expect(s.updatedAt).toBeLessThanOrEqual(NOW);
    }
  });

  it("creates customers before their subscriptions and plans before everything", () => {
    const customers = new Map(data.customers.map((c) => [c.id, c]));
    const firstPlan = Math.min(...data.plans.map((p) => p.createdAt));
    expect(data.merchantCreatedAt).toBeLessThan(firstPlan);
    for (const s of data.subscriptions) {
      expect(customers.get(s.customerId)?.createdAt).toBeLessThanOrEqual(s.createdAt);
      expect(firstPlan).toBeLessThan(s.createdAt);
    }
    for (const c of data.customers) expect(c.email).toMatch(/^[a-z0-9._]+@[a-z.]+$/);
  });

  it("charges price × quantity in the subscription's currency, with consistent side fields", () => {
    for (const charge of data.charges) {
      const s = subscriptionsById.get(charge.subscriptionId) as SubscriptionRow;
      expect(charge.amountMinor).toBe(s.priceMinor * s.quantity);
      expect(charge.currency).toBe(s.currency);
      expect(charge.createdAt).toBeGreaterThanOrEqual(s.createdAt);
      expect(charge.createdAt).toBeLessThanOrEqual(NOW);
      const paid = ["SUCCEEDED", "REFUNDED", "PARTIALLY_REFUNDED"].includes(charge.status);
      expect(charge.orderId !== null).toBe(paid);
      expect(charge.failureCode !== null && charge.failureMessage !== null).toBe(charge.status === "FAILED");
      expect(charge.processedAt === null).toBe(charge.status === "PENDING" || charge.status === "SKIPPED");
      if (charge.processedAt !== null) {
        expect(charge.processedAt).toBeGreaterThanOrEqual(charge.scheduledAt);
        expect(charge.processedAt).toBeLessThanOrEqual(NOW);
      }
      if (charge.status === "REFUNDED") expect(charge.amountRefundedMinor).toBe(charge.amountMinor);
      else if (charge.status === "PARTIALLY_REFUNDED") {
        expect(charge.amountRefundedMinor).toBeGreaterThan(0);
        expect(charge.amountRefundedMinor).toBeLessThan(charge.amountMinor);
      } else expect(charge.amountRefundedMinor).toBe(0);
      if (charge.status === "PENDING") expect(["ACTIVE", "TRIALING"]).toContain(s.status);
    }
  });

  it("prices plans in whole units of each currency's minor digits", () => {
    for (const plan of data.plans) {
      expect(Number.isSafeInteger(plan.priceMinor)).toBe(true);
      expect(plan.priceMinor).toBeGreaterThan(0);
      if (CURRENCIES[plan.currency].digits === 0) expect(plan.priceMinor % 100).toBe(0);
      if (plan.currency === "KWD") expect(plan.priceMinor % 250).toBe(0);
    }
  });

  it("makes orders that add up, in the charge's currency, numbered upward", () => {
    const chargesById = new Map(data.charges.map((c) => [c.id, c]));
    const itemsByOrder = new Map<string, LineItemRow[]>();
    for (const item of data.lineItems) itemsByOrder.set(item.orderId, [...(itemsByOrder.get(item.orderId) ?? []), item]);
    for (const order of data.orders) {
      const charge = chargesById.get(order.chargeId);
      expect(charge?.orderId).toBe(order.id);
      expect(order.totalMinor).toBe(charge?.amountMinor);
      expect(order.currency).toBe(charge?.currency);
      expect(order.subscriptionId).toBe(charge?.subscriptionId);
      expect(order.subtotalMinor - order.discountMinor + order.shippingMinor + order.taxMinor).toBe(order.totalMinor);
      for (const amount of [order.subtotalMinor, order.discountMinor, order.shippingMinor, order.taxMinor]) {
        expect(amount).toBeGreaterThanOrEqual(0);
      }
      const items = itemsByOrder.get(order.id) ?? [];
      expect(items.length).toBeGreaterThan(0);
      expect(items.map((item) => item.position)).toEqual(items.map((_, i) => i + 1));
      for (const item of items) expect(item.totalMinor).toBe(item.quantity * item.unitPriceMinor);
      expect(items.reduce((sum, item) => sum + item.totalMinor, 0)).toBe(order.subtotalMinor);
      expect(order.updatedAt).toBeGreaterThanOrEqual(order.createdAt);
      expect(order.updatedAt).toBeLessThanOrEqual(NOW);
      if (charge?.status === "REFUNDED") expect(["REFUNDED", "CANCELLED"]).toContain(order.status);
    }
    expect(data.orders.map((o) => o.number).sort((a, b) => a - b)).toEqual(data.orders.map((_, i) => i + 1));
  });

  it("continues order numbers from the given first number", () => {
    const later = createSeedGenerator({ ...options, salt: "x", firstOrderNumber: 501 }).nextBatch(50);
    expect(Math.min(...later.orders.map((o) => o.number))).toBe(501);
  });
});
