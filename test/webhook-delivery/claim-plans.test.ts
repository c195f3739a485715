import { loadConfig } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { claimStatements, claimWindow } from "../../services/webhook/src/delivery/claim-repository.ts";
import { recordStatements } from "../../services/webhook/src/delivery/record-repository.ts";
import { deliveryPipelineConfigShape, failingEndpointCap, inFlightCaps } from "../../services/webhook/src/pipeline-config.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { explainRolledBack, type PlanNode, scans } from "../support/plan-scans.ts";

/**
 * The claim's statements read rows in proportion to their window, not to the backlog, whatever the
 * statistics say. The statistics that matter are the ones a backlog leaves behind: webhook_deliveries
 * analyzed while nearly every row was delivered (its usual state), or while it was empty (a new
 * installation), then a backlog of pending rows (a receiver back after an outage, a bulk change) that
 * autovacuum has not analyzed yet. The planner then expects about one pending row, so any partial index
 * of pending rows that a statement's conditions allow, or reading every due row and sorting them, looks
 * as cheap as the plan the step is written for. Each statement is EXPLAIN ANALYZEd with the SQL and the
 * values the webhook service sends, on the webhook role's connection, in a transaction with the
 * claim's setting (the count and the claim) or the recorder's (none), rolled back afterwards.
 */

/** The worker's defaults: half of a replica's slots one endpoint's, and the largest window a claim sends (every slot free). */
const DEFAULTS = loadConfig(deliveryPipelineConfigShape, {});
const CAP = inFlightCaps(DEFAULTS).perEndpoint;
const WINDOW = claimWindow(DEFAULTS.SUBDATA_WEBHOOK_CONCURRENCY, CAP);
/** A backlog eight times what any scan of the window may read: a plan that walks it cannot pass. */
const RESOURCES = 8 * WINDOW;
const VERSIONS = 5;
/** Each scanned row's group has at most VERSIONS pending rows: no scan needs more than this. */
const MOST_ROWS = WINDOW * VERSIONS;

/** The delivered rows the statistics are taken on. */
const STATISTICS = [
  { taken: "on delivered rows", history: 2_000 },
  { taken: "on an empty table", history: 0 },
];

describe.each(STATISTICS)("the claim's plans with statistics taken $taken before a backlog", ({ history }) => {
  const h = useDeliveryHarness("plans");

  const largestScan = (plan: PlanNode) => scans(plan).reduce((most, scan) => (scan.rows > most.rows ? scan : most), { scan: "none", rows: 0 });

  it("count, claim and release each read O(window) rows of a backlog the statistics do not know", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoint = await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/plans" });
    // Nothing may analyze the tables behind the test's back: the statistics stay those of the history.
    await h.admin.query("ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)");
    await h.admin.query("ALTER TABLE webhook_events SET (autovacuum_enabled = false)");
    // Event ids in no particular order (as real ones are): a join that walks the events' primary key up
    // to the highest id it needs walks nearly all of it.
    await h.admin.query(
      `INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body)
       SELECT 'evt_' || md5(r || '/' || v), $1, 'sub_' || md5(r::text), 'subscription.updated', v, now(), '{}'
         FROM generate_series(1, $2::int) AS r, generate_series(1, $3::int) AS v
       UNION ALL
       SELECT 'evt_' || md5('history/' || n), $1, 'sub_' || md5('history/' || n), 'subscription.updated', 1, now(), '{}'
         FROM generate_series(1, $4::int) AS n`,
      [merchantId, RESOURCES, VERSIONS, history],
    );
    await h.admin.query("ANALYZE webhook_events");
    await h.admin.query(
      `INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version, status, attempt_count, last_attempt_at, delivered_at)
       SELECT $1, $2, 'evt_' || md5('history/' || n), 'sub_' || md5('history/' || n), 1, 'SUCCEEDED', 1, now(), now()
         FROM generate_series(1, $3::int) AS n`,
      [merchantId, endpoint.id, history],
    );
    await h.admin.query("ANALYZE webhook_deliveries");
    // The backlog, due in version-major order, as ingest batches written one after another would be.
    await h.admin.query(
      `INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version, next_attempt_at)
       SELECT $1, $2, 'evt_' || md5(r || '/' || v), 'sub_' || md5(r::text), v, now() - interval '1 hour' + (v * $3::int + r) * interval '1 millisecond'
         FROM generate_series(1, $3::int) AS r, generate_series(1, $4::int) AS v`,
      [merchantId, endpoint.id, RESOURCES, VERSIONS],
    );

    const client = await h.pool.connect();
    try {
      const count = await explainRolledBack(client, claimStatements.inFlightCount, [], claimStatements.settings);
      const options = {
        limit: CAP,
        healthyCap: CAP,
        failingCap: failingEndpointCap(DEFAULTS.SUBDATA_WEBHOOK_CONCURRENCY),
        merchantCap: CAP,
        fullEndpointIds: [],
        leaseMs: 30_000,
        scanLimit: WINDOW,
      };
      const claim = await explainRolledBack(client, claimStatements.claim, claimStatements.claimParameters(options, []), claimStatements.settings);
      // A recorder's batch: the heads of a cap's worth of groups finished.
      const { rows: heads } = await client.query<{ resource_id: string }>(
        "SELECT DISTINCT resource_id FROM webhook_deliveries WHERE status = 'PENDING' LIMIT $1",
        [CAP],
      );
      const release = await explainRolledBack(client, recordStatements.releaseNextHeads, [heads.map(() => endpoint.id), heads.map((row) => row.resource_id)]);

      // The claim claimed a full cap (and its summary row): the event lookups ran for each delivery. The
      // backlog is due version-major, so the window's first CAP rows are all heads of their groups.
      expect(claim.Plan["Actual Rows"]).toBe(CAP + 1);
      expect(heads).toHaveLength(CAP);
      for (const [name, explained] of [
        ["in-flight count", count],
        ["claim", claim],
        ["release", release],
      ] as const) {
        const largest = largestScan(explained.Plan);
        expect.soft(largest.rows, `${name}: ${largest.scan} read ${largest.rows} rows`).toBeLessThanOrEqual(MOST_ROWS);
        // Compiling costs far more than these statements run (1.2 s for a claim of 1–2 ms).
        expect.soft(explained.JIT, `${name} was JIT-compiled`).toBeUndefined();
      }
    } finally {
      client.release();
    }
  });
});
