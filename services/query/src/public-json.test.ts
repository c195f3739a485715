import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { OrderSchema } from "@subdata/proto/subdata/order/v1/order_pb";
import { ChargeSchema, SubscriptionSchema } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { renderCharge, renderOrder, renderSubscription } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { databaseEnumLabels } from "./db-enums.ts";
import { orderMessage } from "./order-message.ts";
import type { OrderRow } from "./order-repository.ts";
import { chargeJson, jsonArray, orderJson, subscriptionJson, subscriptionWithChargesJson } from "./public-json.ts";
import { chargeMessage, subscriptionMessage } from "./subscription-message.ts";
import type { ChargeRow, SubscriptionRow } from "./subscription-repository.ts";

// The safety net of render_public_json: the JSON written straight from rows must be byte for byte
// what the typed path gives (row → message → protobuf wire → message → shared renderer → JSON).

const wire = <T>(schema: Parameters<typeof toBinary>[0], message: T): T => fromBinary(schema, toBinary(schema, message as never)) as T;

const typedSubscription = (row: SubscriptionRow) => JSON.stringify(renderSubscription(wire(SubscriptionSchema, subscriptionMessage(row))));
const typedCharge = (row: ChargeRow) => JSON.stringify(renderCharge(wire(ChargeSchema, chargeMessage(row))));
const typedOrder = (row: OrderRow) => JSON.stringify(renderOrder(wire(OrderSchema, orderMessage(row))));

/** Currencies with 0, 2, 3 and 4 minor digits, and amounts around each boundary (negative included). */
const CURRENCIES = ["JPY", "USD", "KWD", "CLF"];
const AMOUNTS = [0n, 1n, 9n, 10n, 99n, 100n, 1999n, 123_456_789_012n, -1n, -1250n, 9_007_199_254_740_993n];
const TIMES = ["2026-11-22 00:11:51.123456+00", "2026-01-01 00:00:00+00", "1999-12-31 23:59:59.9+00", "0001-01-01 00:00:00.000001+00"];
const TEXTS = ["plain", "", 'quote " and \\ backslash', "line\nbreak\ttab\u0001\u001f", "ünïcødé ✓ 🎉 \u2028\u2029 </script>"];

function subscriptionRow(n: number, overrides: Partial<SubscriptionRow>): SubscriptionRow {
  return {
    id: `sub_${n}`,
    merchant_id: "mer_a",
    status: "ACTIVE",
    price_minor: 1999n,
    currency: "USD",
    quantity: 1,
    current_period_start: TIMES[n % TIMES.length]!,
    current_period_end: TIMES[(n + 1) % TIMES.length]!,
    next_charge_at: null,
    trial_ends_at: null,
    paused_at: null,
    cancelled_at: null,
    cancellation_reason: null,
    created_at: TIMES[(n + 2) % TIMES.length]!,
    updated_at: TIMES[(n + 3) % TIMES.length]!,
    version: BigInt(n),
    customer_id: `cus_${n}`,
    customer_email: "a@example.com",
    customer_name: TEXTS[n % TEXTS.length]!,
    plan_id: `plan_${n}`,
    plan_name: TEXTS[(n + 1) % TEXTS.length]!,
    plan_interval: "MONTH",
    plan_interval_count: (n % 12) + 1,
    ...overrides,
  };
}

function allSubscriptionRows(): SubscriptionRow[] {
  const rows: SubscriptionRow[] = [];
  let n = 0;
  const nullable = ["next_charge_at", "trial_ends_at", "paused_at", "cancelled_at"] as const;
  for (const status of databaseEnumLabels.subscription_status) {
    for (const interval of databaseEnumLabels.plan_interval) {
      for (const currency of CURRENCIES) {
        for (const amount of AMOUNTS) {
          // Every subset of the nullable times, rotating through which ones are set.
          const mask = n % 16;
          const times = Object.fromEntries(nullable.map((field, bit) => [field, mask & (1 << bit) ? TIMES[(n + bit) % TIMES.length]! : null]));
          rows.push(
            subscriptionRow(n, {
              status,
              plan_interval: interval,
              currency,
              price_minor: amount,
              quantity: n % 5,
              cancellation_reason: n % 3 === 0 ? null : TEXTS[n % TEXTS.length]!,
              ...times,
            }),
          );
          n++;
        }
      }
    }
  }
  return rows;
}

function allChargeRows(): ChargeRow[] {
  const rows: ChargeRow[] = [];
  let n = 0;
  for (const status of databaseEnumLabels.charge_status) {
    for (const currency of CURRENCIES) {
      for (const amount of AMOUNTS) {
        for (let mask = 0; mask < 16; mask += 5) {
          rows.push({
            id: `ch_${n}`,
            subscription_id: `sub_${n % 3}`,
            status,
            amount_minor: String(amount),
            amount_refunded_minor: String(AMOUNTS[(n + 1) % AMOUNTS.length]),
            currency,
            order_id: mask & 1 ? `ord_${n}` : null,
            failure_code: mask & 2 ? TEXTS[n % TEXTS.length]! : null,
            failure_message: mask & 4 ? TEXTS[(n + 1) % TEXTS.length]! : null,
            scheduled_at: TIMES[n % TIMES.length]!,
            processed_at: mask & 8 ? TIMES[(n + 1) % TIMES.length]! : null,
            created_at: TIMES[(n + 2) % TIMES.length]!,
            version: String(1 + (n % 3)),
          });
          n++;
        }
      }
    }
  }
  return rows;
}

function allOrderRows(): OrderRow[] {
  const rows: OrderRow[] = [];
  let n = 0;
  for (const status of databaseEnumLabels.order_status) {
    for (const currency of CURRENCIES) {
      for (const amount of AMOUNTS) {
        rows.push({
          id: `ord_${n}`,
          merchant_id: "mer_a",
          subscription_id: `sub_${n}`,
          charge_id: n % 2 === 0 ? null : `ch_${n}`,
          number: BigInt(1000 + n),
          status,
          currency,
          subtotal_minor: amount,
          discount_minor: AMOUNTS[(n + 1) % AMOUNTS.length]!,
          shipping_minor: AMOUNTS[(n + 2) % AMOUNTS.length]!,
          tax_minor: AMOUNTS[(n + 3) % AMOUNTS.length]!,
          total_minor: AMOUNTS[(n + 4) % AMOUNTS.length]!,
          created_at: TIMES[n % TIMES.length]!,
          updated_at: TIMES[(n + 1) % TIMES.length]!,
          version: BigInt(1 + (n % 5)),
          line_items: Array.from({ length: n % 4 }, (_, i) => ({
            sku: `SKU-${i}`,
            title: TEXTS[(n + i) % TEXTS.length]!,
            quantity: i + 1,
            unit_price_minor: String(AMOUNTS[(n + i) % AMOUNTS.length]),
            total_minor: String(AMOUNTS[(n + i + 1) % AMOUNTS.length]),
          })),
        });
        n++;
      }
    }
  }
  return rows;
}

describe("public JSON straight from rows", () => {
  it("renders every subscription status, interval, currency and null combination exactly as the typed path", () => {
    const rows = allSubscriptionRows();
    expect(rows.length).toBeGreaterThan(1000);
    for (const row of rows) expect(subscriptionJson(row), row.id).toBe(typedSubscription(row));
    expect(jsonArray(rows, subscriptionJson)).toBe(JSON.stringify(rows.map((row) => JSON.parse(typedSubscription(row)))));
  });

  it("renders every charge status, currency and null combination exactly as the typed path", () => {
    const rows = allChargeRows();
    for (const row of rows) expect(chargeJson(row), row.id).toBe(typedCharge(row));
  });

  it("renders a subscription with its charges (none, some) as the gateway's object with charges", () => {
    const charges = allChargeRows();
    for (const [index, count] of [0, 1, 7, charges.length].entries()) {
      const row = { ...subscriptionRow(index, {}), charges: charges.slice(0, count) };
      const typed = { ...renderSubscription(subscriptionMessage(row)), charges: row.charges.map((charge) => renderCharge(chargeMessage(charge))) };
      expect(subscriptionWithChargesJson(row)).toBe(JSON.stringify(typed));
    }
  });

  it("renders every order status, currency, null and line item count exactly as the typed path", () => {
    for (const row of allOrderRows()) expect(orderJson(row), row.id).toBe(typedOrder(row));
    expect(jsonArray([], orderJson)).toBe("[]");
  });

  it("refuses what the typed path refuses: unknown labels, foreign joins, bad times, unknown currencies", () => {
    const good = subscriptionRow(1, {});
    const bad: Array<Partial<SubscriptionRow>> = [
      { status: "SLEEPING" },
      { plan_interval: "FORTNIGHT" },
      { customer_email: null },
      { plan_name: null },
      { created_at: "2026-11-22T00:11:51Z" },
      { paused_at: "2026-11-22 00:11:51+02" },
      { currency: "XYZ" },
    ];
    for (const overrides of bad) {
      const row = { ...good, ...overrides };
      expect(() => typedSubscription(row), JSON.stringify(overrides)).toThrow();
      expect(() => subscriptionJson(row), JSON.stringify(overrides)).toThrow();
    }
    const charge = allChargeRows()[0]!;
    expect(() => chargeJson({ ...charge, status: "LOST" })).toThrow();
    const order = allOrderRows()[0]!;
    expect(() => orderJson({ ...order, status: "LOST" })).toThrow();
  });
});
