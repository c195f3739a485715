import { outboxStatements } from "../../services/relay/src/outbox-repository.ts";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { busiestNode, explainRolledBack } from "../support/plan-scans.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { createMerchant } from "./support.ts";

/**
 * The relay's claim handles rows in proportion to its batch and what other rounds hold, whatever the
 * statistics say. The statistics that matter are the usual ones: event_outbox analyzed while drained,
 * then a burst of changes that autovacuum has not analyzed yet, claimed by two rounds at once. The
 * planner then expects one pending row on every side of the claim.
 */

const SUBSCRIPTIONS = 1_000;
/** Subscriptions changed twice: their second change is behind a first one that the other round holds. */
const CHANGED_TWICE = 100;
/** The other round's batch: the first half of the burst. */
const HELD = SUBSCRIPTIONS / 2;
/** This claim's batch: the rest of the first changes and every second change. */
const BATCH = SUBSCRIPTIONS - HELD + CHANGED_TWICE;

describe("the relay's claim with statistics taken while the outbox was drained", () => {
  let database: TestDatabase;
  let admin: pg.Pool;

  beforeEach(async () => {
    database = await createTestDatabase("relay-plans");
    admin = new pg.Pool({ connectionString: database.adminUrl, max: 2 });
  });

  afterEach(async () => {
    await admin.end();
    await database.drop();
  });

  it("checks its rows against another round's in O(batch), and leaves out the rows behind them", async () => {
    const owner = await createMerchant(admin, "relay plans");
    await admin.query("ALTER TABLE event_outbox SET (autovacuum_enabled = false)");
    await admin.query("ALTER TABLE change_events SET (autovacuum_enabled = false)");
    await admin.query(
      `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
       SELECT $1, $2, $3, 'ACTIVE', 1999, 'USD', now(), now() + interval '1 month' FROM generate_series(1, $4::int)`,
      [owner.merchantId, owner.customerId, owner.planId, SUBSCRIPTIONS],
    );
    // Drained, and analyzed so: the statistics say no row is pending.
    await admin.query("UPDATE event_outbox SET published_at = clock_timestamp() WHERE published_at IS NULL");
    await admin.query("VACUUM ANALYZE event_outbox");
    await admin.query("ANALYZE change_events");
    // The burst: one change of every subscription, then a second change of the first few changed.
    await admin.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE merchant_id = $1", [owner.merchantId]);
    await admin.query(
      "UPDATE subscriptions SET quantity = quantity + 1 WHERE id IN (SELECT resource_id FROM event_outbox WHERE published_at IS NULL ORDER BY seq LIMIT $1)",
      [CHANGED_TWICE],
    );

    const otherRound = new pg.Client({ connectionString: database.roleUrls.webhook });
    const thisRound = new pg.Client({ connectionString: database.roleUrls.webhook });
    await otherRound.connect();
    await thisRound.connect();
    try {
      // The other round holds the burst's first rows, among them the first change of each subscription changed twice.
      await otherRound.query("BEGIN");
      const held = await otherRound.query<{ resource_id: string }>(
        "SELECT resource_id FROM event_outbox WHERE published_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED",
        [HELD],
      );
      const { rows: twice } = await admin.query<{ resource_id: string }>(
        "SELECT resource_id FROM event_outbox WHERE published_at IS NULL GROUP BY resource_id HAVING count(*) = 2",
      );
      const heldResources = new Set(held.rows.map((row) => row.resource_id));
      expect(twice.filter((row) => heldResources.has(row.resource_id))).toHaveLength(CHANGED_TWICE);

      await thisRound.query("BEGIN");
      try {
        const { rows: claimed } = await thisRound.query<{ resource_id: string }>(outboxStatements.claim, [BATCH]);
        // Every second change waits for its first, which the other round holds.
        expect(claimed).toHaveLength(SUBSCRIPTIONS - HELD);
        expect(claimed.filter((row) => heldResources.has(row.resource_id))).toEqual([]);
      } finally {
        await thisRound.query("ROLLBACK");
      }

      const explained = await explainRolledBack(thisRound, outboxStatements.claim, [BATCH]);
      const busiest = busiestNode(explained.Plan);
      // The pending rows: read once to claim, once to find what is held elsewhere.
      expect(busiest.rows, `${busiest.node} handled ${busiest.rows} rows`).toBeLessThanOrEqual(2 * (HELD + BATCH));
    } finally {
      await otherRound.query("ROLLBACK").catch(() => {});
      await otherRound.end();
      await thisRound.end();
    }
  });
});
