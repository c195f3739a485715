import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures, type Fixtures } from "../support/fixtures.ts";
import { type RunningQueryServer, startQueryServer } from "../support/query-server.ts";

// The feed's order is commit order: while writers commit overlapping transactions (some held open for
// a second or more, some rolled back), readers follow the feed page by page, and none of them ever
// finds an event placed behind a position it has passed. Checked by reading the whole feed once the
// writers stop: every reader's walk must be a prefix of it, event for event.
//
// fast-check generates the writers' schedules (which rows, how long each transaction stays open,
// commit or roll back) and the readers' page sizes; a failure prints the seed that reproduces the
// schedule (`fc.assert(…, { seed })`); the interleaving itself is the database's.

const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 12 });
let fixtures: Fixtures;
let query: RunningQueryServer;

beforeAll(async () => {
  fixtures = createFixtures(admin);
  query = await startQueryServer();
});
afterAll(async () => {
  await query?.stop();
  await admin.end();
});

interface Transaction {
  /** Indexes into the merchant's subscriptions, updated in ascending order (no deadlocks). */
  rows: number[];
  /** How long the transaction stays open after its writes. */
  holdMs: number;
  commit: boolean;
}

const SUBSCRIPTIONS = 6;

const transaction = fc.record({
  rows: fc.uniqueArray(fc.integer({ min: 0, max: SUBSCRIPTIONS - 1 }), { minLength: 1, maxLength: 3 }).map((rows) => rows.sort((a, b) => a - b)),
  holdMs: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 40 }) }, { weight: 1, arbitrary: fc.integer({ min: 600, max: 1500 }) }),
  // Four in five commit.
  commit: fc.integer({ min: 0, max: 4 }).map((n) => n > 0),
});

const scenario = fc.record({
  writers: fc.array(fc.array(transaction, { minLength: 4, maxLength: 10 }), { minLength: 4, maxLength: 6 }),
  readerPageSizes: fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 3, maxLength: 3 }),
});

async function runWriter(merchantId: string, ids: string[], schedule: Transaction[]): Promise<number> {
  let committedUpdates = 0;
  const client = await admin.connect();
  try {
    for (const step of schedule) {
      await client.query("BEGIN");
      for (const row of step.rows)
        await client.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1 AND merchant_id = $2", [ids[row], merchantId]);
      if (step.holdMs > 0) await sleep(step.holdMs);
      await client.query(step.commit ? "COMMIT" : "ROLLBACK");
      if (step.commit) committedUpdates += step.rows.length;
    }
  } finally {
    client.release();
  }
  return committedUpdates;
}

/** Follows the feed from its start until `stop` is set and a read comes back empty; returns the ids in the order seen. */
async function follow(merchantId: string, pageSize: number, stop: { done: boolean }): Promise<string[]> {
  const seen: string[] = [];
  let pageToken = "";
  for (;;) {
    const writersDone = stop.done;
    const page = await query.events.listEvents({ merchantId, pageSize, pageToken });
    seen.push(...page.events.map((event) => event.id));
    pageToken = page.nextPageToken;
    if (page.events.length === 0 && !page.hasMore) {
      if (writersDone) return seen;
      await sleep(5);
    }
  }
}

describe("the change feed's order", () => {
  it("never places an event behind a position a reader has passed, whatever the writers' overlap", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ writers, readerPageSizes }) => {
        const merchantId = await fixtures.merchant();
        const ids: string[] = [];
        for (let i = 0; i < SUBSCRIPTIONS; i++) ids.push((await fixtures.subscription({ merchantId })).id);

        const stop = { done: false };
        const readers = readerPageSizes.map((pageSize) => follow(merchantId, pageSize, stop));
        const committed = await Promise.all(writers.map((schedule) => runWriter(merchantId, ids, schedule)));
        stop.done = true;
        const walks = await Promise.all(readers);

        const everything = await follow(merchantId, 1000, { done: true });
        // Exactly one event per committed change: the creates, then every committed update.
        expect(everything).toHaveLength(SUBSCRIPTIONS + committed.reduce((sum, n) => sum + n, 0));
        expect(new Set(everything).size).toBe(everything.length);
        for (const walk of walks) expect(walk).toEqual(everything.slice(0, walk.length));
        // The readers kept following until the writers stopped: each saw everything.
        for (const walk of walks) expect(walk).toHaveLength(everything.length);
      }),
      { numRuns: 3 },
    );
  }, 120_000);
});
