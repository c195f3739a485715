import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createSubdataClient, type Charge, type Order, type SubdataClient, type Subscription } from "@subdata/client";
import pg from "pg";
import { inject } from "vitest";
import { startGatewayHarness, type GatewayHarness } from "../gateway/gateway-harness.ts";

/**
 * The whole read path (query and auth services, gateway) listening on a real port, a merchant with a
 * key, and a separate target database for copies. The source is written with SQL as the app would.
 */
export interface MirrorHarness {
  gateway: GatewayHarness;
  /** http://127.0.0.1:<port> */
  apiUrl: string;
  /** The source database (superuser), for writes the app would make. */
  source: pg.Pool;
  /** The target database: postgres URL and a pool on it. */
  targetUrl: string;
  target: pg.Pool;
  merchant(): Promise<{ merchantId: string; key: string; client: SubdataClient }>;
  close(): Promise<void>;
}

export async function startMirrorHarness(): Promise<MirrorHarness> {
  const gateway = await startGatewayHarness();
  await gateway.gateway.listen({ host: "127.0.0.1", port: 0 });
  const address = gateway.gateway.server.address();
  if (!address || typeof address === "string") throw new Error("the gateway is not listening on TCP");
  const apiUrl = `http://127.0.0.1:${address.port}`;

  const adminUrl = new URL(inject("adminDatabaseUrl"));
  const targetName = `${adminUrl.pathname.slice(1)}_copy_${randomBytes(3).toString("hex")}`;
  await gateway.admin.query(`CREATE DATABASE ${targetName}`);
  const targetUrlObject = new URL(adminUrl);
  targetUrlObject.pathname = `/${targetName}`;
  const targetUrl = targetUrlObject.toString();
  const target = new pg.Pool({ connectionString: targetUrl, max: 6 });
  // DROP DATABASE … WITH (FORCE) at the end ends connections a closing pool may still hold.
  target.on("error", () => {});

  return {
    gateway,
    apiUrl,
    source: gateway.admin,
    targetUrl,
    target,
    async merchant() {
      const merchantId = await gateway.fixtures.merchant();
      const { key } = await gateway.createKey(merchantId);
      return { merchantId, key, client: createSubdataClient({ baseUrl: apiUrl, apiKey: key }) };
    },
    async close() {
      await target.end();
      await gateway.admin.query(`DROP DATABASE IF EXISTS ${targetName} WITH (FORCE)`);
      await gateway.close();
    },
  };
}

export interface ApiSnapshot {
  subscriptions: Subscription[];
  charges: Charge[];
  orders: Order[];
}

const byId = <T extends { id: string }>(items: T[]) => [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** Everything the key sees, through the API, sorted by id. */
export async function apiSnapshot(client: SubdataClient): Promise<ApiSnapshot> {
  const collect = async <T extends { id: string }>(items: AsyncIterable<T>) => {
    const all: T[] = [];
    for await (const item of items) all.push(item);
    return byId(all);
  };
  return {
    subscriptions: await collect(client.walk("subscriptions", { limit: 200 })),
    charges: await collect(client.walk("charges", { limit: 200 })),
    orders: await collect(client.walk("orders", { limit: 200 })),
  };
}

const time = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const money = (column: string) => `jsonb_build_object('amount', ${column}::text, 'currency', ${column}_currency)`;

/** The copy in a schema, rendered back into the API's objects (every field from its columns), sorted by id. */
export async function copySnapshot(target: pg.Pool, schema: string): Promise<ApiSnapshot> {
  const subscriptions = await target.query<{ object: Subscription }>(
    `SELECT jsonb_build_object(
       'id', id, 'object', 'subscription', 'status', status,
       'customer', jsonb_build_object('id', customer_id, 'email', customer_email, 'name', customer_name),
       'plan', jsonb_build_object('id', plan_id, 'name', plan_name, 'interval', plan_interval, 'interval_count', plan_interval_count),
       'price', ${money("price")}, 'quantity', quantity,
       'current_period_start', ${time("current_period_start")}, 'current_period_end', ${time("current_period_end")},
       'next_charge_at', ${time("next_charge_at")}, 'trial_ends_at', ${time("trial_ends_at")}, 'paused_at', ${time("paused_at")},
       'cancelled_at', ${time("cancelled_at")}, 'cancellation_reason', cancellation_reason,
       'created_at', ${time("created_at")}, 'updated_at', ${time("updated_at")}, 'version', version) AS object
       FROM ${schema}.subscriptions ORDER BY id`,
  );
  const charges = await target.query<{ object: Charge }>(
    `SELECT jsonb_build_object(
       'id', id, 'object', 'charge', 'subscription_id', subscription_id, 'status', status,
       'amount', ${money("amount")}, 'amount_refunded', ${money("amount_refunded")}, 'order_id', order_id,
       'failure_code', failure_code, 'failure_message', failure_message,
       'scheduled_at', ${time("scheduled_at")}, 'processed_at', ${time("processed_at")}, 'created_at', ${time("created_at")},
       'version', version) AS object
       FROM ${schema}.charges ORDER BY id`,
  );
  const orders = await target.query<{ object: Order }>(
    `SELECT jsonb_build_object(
       'id', o.id, 'object', 'order', 'subscription_id', o.subscription_id, 'charge_id', o.charge_id, 'number', o.number,
       'status', o.status, 'subtotal', ${money("o.subtotal")}, 'discount', ${money("o.discount")}, 'shipping', ${money("o.shipping")},
       'tax', ${money("o.tax")}, 'total', ${money("o.total")},
       'line_items', coalesce((SELECT jsonb_agg(jsonb_build_object('sku', li.sku, 'title', li.title, 'quantity', li.quantity,
                                  'unit_price', ${money("li.unit_price")}, 'total', ${money("li.total")}) ORDER BY li.position)
                                 FROM ${schema}.order_line_items li WHERE li.order_id = o.id), '[]'::jsonb),
       'created_at', ${time("o.created_at")}, 'updated_at', ${time("o.updated_at")}, 'version', o.version) AS object
       FROM ${schema}.orders o ORDER BY o.id`,
  );
  // jsonb_build_object makes bigint columns JSON numbers, like the API.
  return {
    subscriptions: byId(subscriptions.rows.map((row) => row.object)),
    charges: byId(charges.rows.map((row) => row.object)),
    orders: byId(orders.rows.map((row) => row.object)),
  };
}

export interface SyncStateRow {
  phase: string;
  feed_cursor: string;
  subscriptions_walked: boolean;
  charges_walked: boolean;
  orders_walked: boolean;
  events_applied: string;
}

export async function syncState(target: pg.Pool, schema: string): Promise<SyncStateRow | undefined> {
  const result = await target.query<SyncStateRow>(
    `SELECT phase, feed_cursor, subscriptions_walked, charges_walked, orders_walked, events_applied::text FROM ${schema}.sync_state`,
  );
  return result.rows[0];
}

/** How many events the feed holds after `cursor` (the count a copy that started there must have applied). */
export async function eventsAfter(client: SubdataClient, cursor: string): Promise<number> {
  let count = 0;
  for await (const page of client.followPages({ cursor, wait: 0, limit: 1000, maxRetries: 0 })) {
    count += page.data.length;
    if (!page.has_more) break;
  }
  return count;
}

/** A source merchant with a bit of everything: several currencies, nulls and non-nulls, multi-item orders. */
export async function seedMerchant(harness: MirrorHarness, merchantId: string, subscriptions = 5): Promise<void> {
  const { fixtures } = harness.gateway;
  const currencies = ["USD", "JPY", "KWD", "EUR"];
  for (let index = 0; index < subscriptions; index++) {
    const currency = currencies[index % currencies.length]!;
    const subscription = await fixtures.subscription({
      merchantId,
      currency,
      priceMinor: 1999 + index,
      quantity: 1 + (index % 3),
      status: index % 3 === 1 ? "TRIALING" : index % 3 === 2 ? "CANCELLED" : "ACTIVE",
      trialEndsAt: index % 3 === 1 ? "2027-01-01T00:00:00.123Z" : null,
      cancelledAt: index % 3 === 2 ? "2026-10-01T12:00:00.456Z" : null,
      cancellationReason: index % 3 === 2 ? "too expensive" : null,
    });
    const paid = await fixtures.charge({
      merchantId,
      subscriptionId: subscription.id,
      currency,
      amountMinor: 1999 + index,
      processedAt: "2026-11-01T00:00:00.001Z",
    });
    await fixtures.charge({
      merchantId,
      subscriptionId: subscription.id,
      currency,
      status: "FAILED",
      failureCode: "card_declined",
      failureMessage: "The card was declined.",
    });
    await fixtures.order({
      merchantId,
      subscriptionId: subscription.id,
      chargeId: paid,
      currency,
      lineItems: [{ sku: `SKU-${index}`, quantity: 2, unitPriceMinor: 500 }, { title: "Gift wrap" }],
      shippingMinor: 300,
      taxMinor: 120,
    });
  }
}

const MIRROR_BIN = fileURLToPath(new URL("../../clients/mirror/bin/subdata-mirror.js", import.meta.url));

export interface MirrorProcess {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Resolves once a stderr line matches. */
  waitForLine(pattern: RegExp): Promise<void>;
}

/** The mirror's bin as a child process (as an operator or a supervisor runs it). */
export function spawnMirror(args: readonly string[], env: Record<string, string>): MirrorProcess {
  const child = spawn(process.execPath, [MIRROR_BIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const watchers: Array<{ pattern: RegExp; resolve: () => void }> = [];
  const lines = (sink: string[], onLine?: (line: string) => void) => {
    let buffered = "";
    return (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      for (const line of parts) {
        sink.push(line);
        onLine?.(line);
      }
    };
  };
  child.stdout!.on("data", lines(stdout));
  child.stderr!.on(
    "data",
    lines(stderr, (line) => {
      for (const watcher of [...watchers]) {
        if (watcher.pattern.test(line)) {
          watchers.splice(watchers.indexOf(watcher), 1);
          watcher.resolve();
        }
      }
    }),
  );
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return {
    child,
    stdout,
    stderr,
    exited,
    waitForLine(pattern) {
      if (stderr.some((line) => pattern.test(line))) return Promise.resolve();
      return new Promise((resolve, reject) => {
        watchers.push({ pattern, resolve });
        void exited.then((code) => reject(new Error(`the mirror exited (${code}) before printing ${pattern}; stderr:\n${stderr.join("\n")}`)));
      });
    },
  };
}
