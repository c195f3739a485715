/**
 * The copy's tables, defined once: each column's name, type and the SQL expression that reads it from
 * the API's JSON object `o` (a jsonb value). The DDL, the check of an existing schema's shape and the
 * upserts are all made from these lists, so they cannot disagree.
 *
 * One column per public field; nested objects are flattened (`customer.email` → `customer_email`).
 * Money fields keep the API's decimal as `numeric` (exact, and with the scale sent: `19.99`, `1500`,
 * `1.250`, so `price::text` is the API's `amount` string) next to `<field>_currency`. Times are
 * `timestamptz`, as precise as the API (milliseconds).
 */

export type ColumnType = "text" | "integer" | "bigint" | "numeric" | "timestamptz" | "boolean";

export interface Column {
  name: string;
  type: ColumnType;
  nullable: boolean;
  /** SQL over `o` (jsonb) giving the column's value; line items also see `item` and `ordinality`. */
  from: string;
}

const field = (path: readonly string[], from = "o") =>
  path.length === 1
    ? `${from}->>'${path[0]}'`
    : `${from}${path
        .slice(0, -1)
        .map((key) => `->'${key}'`)
        .join("")}->>'${path.at(-1)}'`;

function column(name: string, type: ColumnType, nullable: boolean, path: readonly string[] = [name], from = "o"): Column {
  const value = field(path, from);
  return { name, type, nullable, from: type === "text" ? value : `(${value})::${type}` };
}

const text = (name: string, path?: readonly string[]) => column(name, "text", false, path);
const nullableText = (name: string) => column(name, "text", true);
const time = (name: string) => column(name, "timestamptz", true);
const requiredTime = (name: string) => column(name, "timestamptz", false);

/** A Money field `name`: `name` (numeric amount) and `name_currency`. */
function money(name: string, from = "o"): Column[] {
  return [column(name, "numeric", false, [name, "amount"], from), column(`${name}_currency`, "text", false, [name, "currency"], from)];
}

export const subscriptionColumns: readonly Column[] = [
  text("id"),
  text("status"),
  text("customer_id", ["customer", "id"]),
  text("customer_email", ["customer", "email"]),
  text("customer_name", ["customer", "name"]),
  text("plan_id", ["plan", "id"]),
  text("plan_name", ["plan", "name"]),
  text("plan_interval", ["plan", "interval"]),
  column("plan_interval_count", "integer", false, ["plan", "interval_count"]),
  ...money("price"),
  column("quantity", "integer", false),
  time("current_period_start"),
  time("current_period_end"),
  time("next_charge_at"),
  time("trial_ends_at"),
  time("paused_at"),
  time("cancelled_at"),
  nullableText("cancellation_reason"),
  requiredTime("created_at"),
  requiredTime("updated_at"),
  column("version", "bigint", false),
];

export const chargeColumns: readonly Column[] = [
  text("id"),
  text("subscription_id"),
  text("status"),
  ...money("amount"),
  ...money("amount_refunded"),
  nullableText("order_id"),
  nullableText("failure_code"),
  nullableText("failure_message"),
  time("scheduled_at"),
  time("processed_at"),
  requiredTime("created_at"),
  column("version", "bigint", false),
];

export const orderColumns: readonly Column[] = [
  text("id"),
  text("subscription_id"),
  nullableText("charge_id"),
  column("number", "bigint", false),
  text("status"),
  ...money("subtotal"),
  ...money("discount"),
  ...money("shipping"),
  ...money("tax"),
  ...money("total"),
  requiredTime("created_at"),
  requiredTime("updated_at"),
  column("version", "bigint", false),
];

/** An order's line items, in the order the API lists them; `position` counts from 1. */
export const lineItemColumns: readonly Column[] = [
  { name: "order_id", type: "text", nullable: false, from: "o->>'id'" },
  { name: "position", type: "integer", nullable: false, from: "ordinality::integer" },
  column("sku", "text", false, ["sku"], "item"),
  column("title", "text", false, ["title"], "item"),
  column("quantity", "integer", false, ["quantity"], "item"),
  ...money("unit_price", "item"),
  ...money("total", "item"),
];

const syncStateColumns: readonly Column[] = [
  { name: "singleton", type: "boolean", nullable: false, from: "" },
  { name: "api_url", type: "text", nullable: false, from: "" },
  { name: "phase", type: "text", nullable: false, from: "" },
  { name: "feed_cursor", type: "text", nullable: false, from: "" },
  { name: "subscriptions_cursor", type: "text", nullable: true, from: "" },
  { name: "subscriptions_walked", type: "boolean", nullable: false, from: "" },
  { name: "charges_cursor", type: "text", nullable: true, from: "" },
  { name: "charges_walked", type: "boolean", nullable: false, from: "" },
  { name: "orders_cursor", type: "text", nullable: true, from: "" },
  { name: "orders_walked", type: "boolean", nullable: false, from: "" },
  { name: "events_applied", type: "bigint", nullable: false, from: "" },
  { name: "started_at", type: "timestamptz", nullable: false, from: "" },
  { name: "updated_at", type: "timestamptz", nullable: false, from: "" },
];

/** The resources copied from lists and the feed, by the name both use. */
export const RESOURCES = ["subscriptions", "charges", "orders"] as const;
export type Resource = (typeof RESOURCES)[number];

export const TABLES = {
  subscriptions: subscriptionColumns,
  charges: chargeColumns,
  orders: orderColumns,
  order_line_items: lineItemColumns,
  sync_state: syncStateColumns,
} as const;
export type TableName = keyof typeof TABLES;
