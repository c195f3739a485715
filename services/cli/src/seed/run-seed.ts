import type pg from "pg";
import { inTransaction } from "../database.ts";
import { copyPlans, writeSeedBatch } from "./copy-writer.ts";
import { createSeedGenerator } from "./generator.ts";
import { microsToText } from "./time.ts";

export interface RunSeedOptions {
  merchantId: string;
  /** Used only when the merchant is created. */
  merchantName?: string;
  subscriptions: number;
  seed: string;
  /** The generator's "now", microseconds since the epoch. */
  now: number;
  /** Subscriptions per transaction. */
  batchSize?: number;
  /**
   * False bulk-loads without row triggers (superuser only; see writeSeedBatch): no outbox events for
   * the seeded subscriptions. Default true.
   */
  captureChanges?: boolean;
  /** Called after each committed batch with the subscriptions written so far. */
  onProgress?: (written: number) => void;
}

export interface SeedCounts {
  plans: number;
  customers: number;
  subscriptions: number;
  charges: number;
  orders: number;
  lineItems: number;
}

export interface SeedResult {
  merchantId: string;
  merchantCreated: boolean;
  seed: string;
  /** "" when the merchant had no data: then the same seed and now reproduce this run exactly. */
  salt: string;
  counts: SeedCounts;
}

export const DEFAULT_BATCH_SIZE = 5_000;

interface ExistingData {
  merchantExists: boolean;
  counts: [customers: string, plans: string, subscriptions: string, charges: string, orders: string];
  maxOrderNumber: string;
}

async function readExistingData(client: pg.ClientBase, merchantId: string): Promise<ExistingData> {
  const result = await client.query<{
    merchant: boolean;
    customers: string;
    plans: string;
    subscriptions: string;
    charges: string;
    orders: string;
    max_number: string;
  }>(
    `SELECT EXISTS (SELECT 1 FROM merchants WHERE id = $1) AS merchant,
            (SELECT count(*) FROM customers WHERE merchant_id = $1)::text AS customers,
            (SELECT count(*) FROM plans WHERE merchant_id = $1)::text AS plans,
            (SELECT count(*) FROM subscriptions WHERE merchant_id = $1)::text AS subscriptions,
            (SELECT count(*) FROM charges WHERE merchant_id = $1)::text AS charges,
            (SELECT count(*) FROM orders WHERE merchant_id = $1)::text AS orders,
            (SELECT coalesce(max(number), 0) FROM orders WHERE merchant_id = $1)::text AS max_number`,
    [merchantId],
  );
  const row = result.rows[0];
  if (!row) throw new Error("the existing-data query returned no row");
  return {
    merchantExists: row.merchant,
    counts: [row.customers, row.plans, row.subscriptions, row.charges, row.orders],
    maxOrderNumber: row.max_number,
  };
}

/**
 * Seeds one merchant on a connected client (an owner connection: it writes every table).
 *
 * Determinism rule: on a merchant with no rows, the same seed and now give the same rows, ids
 * included. When the merchant already has rows, their counts become the salt, so a re-run draws
 * fresh ids and content and never touches or collides with what exists. Runs on one merchant are
 * serialised with an advisory lock (order numbers continue from the current maximum).
 */
export async function runSeed(client: pg.ClientBase, options: RunSeedOptions): Promise<SeedResult> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [`subdata-seed:${options.merchantId}`]);
  try {
    const existing = await readExistingData(client, options.merchantId);
    const salt = existing.counts.every((count) => count === "0") ? "" : existing.counts.join("/");
    const firstOrderNumber = Number(existing.maxOrderNumber) + 1;
    const generator = createSeedGenerator({ merchantId: options.merchantId, seed: options.seed, salt, now: options.now, firstOrderNumber });

    await inTransaction(client, async () => {
      if (!existing.merchantExists) {
        await client.query("INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3)", [
          options.merchantId,
          options.merchantName ?? `Seeded merchant ${options.merchantId.slice(4)}`,
          microsToText(generator.merchantCreatedAt),
        ]);
      }
      await copyPlans(client, generator.plans);
    });

    const counts: SeedCounts = { plans: generator.plans.length, customers: 0, subscriptions: 0, charges: 0, orders: 0, lineItems: 0 };
    while (counts.subscriptions < options.subscriptions) {
      const batch = generator.nextBatch(Math.min(batchSize, options.subscriptions - counts.subscriptions));
      await writeSeedBatch(client, batch, { withoutTriggers: options.captureChanges === false });
      counts.customers += batch.customers.length;
      counts.subscriptions += batch.subscriptions.length;
      counts.charges += batch.charges.length;
      counts.orders += batch.orders.length;
      counts.lineItems += batch.lineItems.length;
      options.onProgress?.(counts.subscriptions);
    }
    return { merchantId: options.merchantId, merchantCreated: !existing.merchantExists, seed: options.seed, salt, counts };
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [`subdata-seed:${options.merchantId}`]).catch(() => {});
  }
}
