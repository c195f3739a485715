import { formatMinorUnits, PUBLIC_LIST_START, pgTimestampToRfc3339Millis, pgTimestampToRfc3339MillisOrNull } from "@subdata/runtime";
import { OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { ChargeStatus, PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { chargeStatusFromDb, orderStatusFromDb, planIntervalFromDb, subscriptionStatusFromDb } from "./db-enums.ts";
import type { OrderRow } from "./order-repository.ts";
import { requireOwnCustomerAndPlan } from "./subscription-message.ts";
import type { ChargeRow, SubscriptionRow, SubscriptionWithChargesRow } from "./subscription-repository.ts";

/**
 * The public JSON of contract section 2, written straight from the SQL rows for the REST edge
 * (render_public_json): no protobuf messages, no Timestamp objects, no object per field. It must be
 * byte for byte what JSON.stringify(renderSubscription(subscriptionMessage(row))) and its siblings
 * give (public-json.test.ts checks every status, currency and null), so the same attribute order,
 * the same enum names, money digits and time format. Strings go through JSON.stringify; enum names,
 * amounts, times and numbers cannot need escaping.
 */

const string = (value: string): string => JSON.stringify(value);
const nullableString = (value: string | null): string => (value === null ? "null" : JSON.stringify(value));
const time = (text: string): string => `"${pgTimestampToRfc3339Millis(text)}"`;
const nullableTime = (text: string | null): string => {
  const rendered = pgTimestampToRfc3339MillisOrNull(text);
  return rendered === null ? "null" : `"${rendered}"`;
};
const money = (amountMinor: bigint, currency: string): string => `{"amount":"${formatMinorUnits(amountMinor, currency)}","currency":${string(currency)}}`;

// The public enum names are the proto names; the lookups refuse a label the code does not know.
const subscriptionStatus = (label: string): string => `"${SubscriptionStatus[subscriptionStatusFromDb(label)]}"`;
const planInterval = (label: string): string => `"${PlanInterval[planIntervalFromDb(label)]}"`;
const chargeStatus = (label: string): string => `"${ChargeStatus[chargeStatusFromDb(label)]}"`;
const orderStatus = (label: string): string => `"${OrderStatus[orderStatusFromDb(label)]}"`;

/** The subscription object without its closing brace, so GetSubscription can append "charges". */
function openSubscription(row: SubscriptionRow): string {
  const { customerEmail, customerName, planName, planInterval: interval, planIntervalCount } = requireOwnCustomerAndPlan(row);
  return (
    `{"id":${string(row.id)},"object":"subscription","status":${subscriptionStatus(row.status)}` +
    `,"customer":{"id":${string(row.customer_id)},"email":${string(customerEmail)},"name":${string(customerName)}}` +
    `,"plan":{"id":${string(row.plan_id)},"name":${string(planName)},"interval":${planInterval(interval)},"interval_count":${planIntervalCount}}` +
    `,"price":${money(row.price_minor, row.currency)},"quantity":${row.quantity}` +
    `,"current_period_start":${time(row.current_period_start)},"current_period_end":${time(row.current_period_end)}` +
    `,"next_charge_at":${nullableTime(row.next_charge_at)},"trial_ends_at":${nullableTime(row.trial_ends_at)}` +
    `,"paused_at":${nullableTime(row.paused_at)},"cancelled_at":${nullableTime(row.cancelled_at)}` +
    `,"cancellation_reason":${nullableString(row.cancellation_reason)}` +
    `,"created_at":${time(row.created_at)},"updated_at":${time(row.updated_at)},"version":${Number(row.version)}`
  );
}

export function subscriptionJson(row: SubscriptionRow): string {
  return `${openSubscription(row)}}`;
}

export function chargeJson(row: ChargeRow): string {
  return (
    `{"id":${string(row.id)},"object":"charge","subscription_id":${string(row.subscription_id)},"status":${chargeStatus(row.status)}` +
    `,"amount":${money(BigInt(row.amount_minor), row.currency)},"amount_refunded":${money(BigInt(row.amount_refunded_minor), row.currency)}` +
    `,"order_id":${nullableString(row.order_id)},"failure_code":${nullableString(row.failure_code)}` +
    `,"failure_message":${nullableString(row.failure_message)}` +
    `,"scheduled_at":${time(row.scheduled_at)},"processed_at":${nullableTime(row.processed_at)},"created_at":${time(row.created_at)}` +
    `,"version":${Number(row.version)}}`
  );
}

/** The subscription object with its "charges" array, as GET /v1/subscriptions/{id} answers. */
export function subscriptionWithChargesJson(row: SubscriptionWithChargesRow): string {
  return `${openSubscription(row)},"charges":${jsonArray(row.charges, chargeJson)}}`;
}

export function orderJson(row: OrderRow): string {
  let lineItems = "";
  for (const item of row.line_items) {
    lineItems +=
      `${lineItems === "" ? "" : ","}{"sku":${string(item.sku)},"title":${string(item.title)},"quantity":${item.quantity}` +
      `,"unit_price":${money(BigInt(item.unit_price_minor), row.currency)},"total":${money(BigInt(item.total_minor), row.currency)}}`;
  }
  return (
    `{"id":${string(row.id)},"object":"order","subscription_id":${string(row.subscription_id)}` +
    `,"charge_id":${nullableString(row.charge_id)},"number":${Number(row.number)},"status":${orderStatus(row.status)}` +
    `,"subtotal":${money(row.subtotal_minor, row.currency)},"discount":${money(row.discount_minor, row.currency)}` +
    `,"shipping":${money(row.shipping_minor, row.currency)},"tax":${money(row.tax_minor, row.currency)}` +
    `,"total":${money(row.total_minor, row.currency)},"line_items":[${lineItems}]` +
    `,"created_at":${time(row.created_at)},"updated_at":${time(row.updated_at)},"version":${Number(row.version)}}`
  );
}

/** A JSON array of rendered rows. */
export function jsonArray<T>(rows: readonly T[], render: (row: T) => string): string {
  let text = "[";
  for (let i = 0; i < rows.length; i++) text += i === 0 ? render(rows[i]!) : `,${render(rows[i]!)}`;
  return `${text}]`;
}

/** UTF-8 bytes for a response's public_json field. */
export function utf8(text: string): Uint8Array {
  return Buffer.from(text, "utf8");
}

/**
 * A rendered page's JSON: with render_public_list, the whole REST list object in public_list_json,
 * `end` after the items (publicListEnd, publicFeedEnd), which the edge sends as it is; otherwise the
 * items alone in public_json.
 */
export function pageJson(items: string, renderPublicList: boolean, end: string): { publicJson: Uint8Array } | { publicListJson: Uint8Array } {
  return renderPublicList ? { publicListJson: utf8(`${PUBLIC_LIST_START}${items}${end}`) } : { publicJson: utf8(items) };
}
