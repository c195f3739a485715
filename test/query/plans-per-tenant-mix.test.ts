import { createQueryPool } from "@subdata/query";
import type { Pool } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChargeRepository, chargeStatements } from "../../services/query/src/charge-repository.ts";
import {
  createEventRepository,
  eventStatements,
  FEED_START,
  MAX_EVENT_PAGE_SIZE,
  TYPE_FILTER_COMMIT_WINDOW,
} from "../../services/query/src/event-repository.ts";
import { createOrderRepository, orderStatements } from "../../services/query/src/order-repository.ts";
import { MAX_LIST_ROWS } from "../../services/query/src/planned-page.ts";
import { createSubscriptionRepository, subscriptionStatements } from "../../services/query/src/subscription-repository.ts";
import { type PlanNode, type Scan, scans } from "../support/plan-scans.ts";
import { loadTenantMix, tenantMixes } from "../support/tenant-mix.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";

/**
 * Every statement of the query service touches O(page) rows whatever the tenant mix. Each statement is
 * run as the service's pool runs it (createQueryPool: plan_cache_mode=force_generic_plan, the
 * repository's named statement with the values the repository binds), on a database whose statistics
 * are those of the mix, and then EXPLAIN ANALYZEd through EXECUTE of that same prepared statement: rows
 * and blocks every scan read, and the rows the plan was made for. A
 * generic plan is made once for an average merchant; these reads are of the largest merchant, where a
 * plan made for the average (a hash join of every customer of the merchant, say) costs the most.
 */

/** Subscriptions in each mix: the merchant the reads walk holds 6,000–20,000 of them. */
const SUBSCRIPTIONS = 20_000;
const PAGE = 50;
/** The gateway's default page (50) and the event feed's (100), plus the one row that tells whether more follow. */
const LIMIT = PAGE + 1;
const EVENT_LIMIT = 101;
/** As the event service reads: a type-filtered read looks through this many commits. */
const COMMIT_WINDOW = TYPE_FILTER_COMMIT_WINDOW;
/** A feed page of the largest size: its events, and the one commit more that the read fetches. */
const MAX_EVENT_ROWS = MAX_EVENT_PAGE_SIZE + 2;

interface Repositories {
  subscriptions: ReturnType<typeof createSubscriptionRepository>;
  charges: ReturnType<typeof createChargeRepository>;
  orders: ReturnType<typeof createOrderRepository>;
  events: ReturnType<typeof createEventRepository>;
}

/** Places in the walked merchant's data, read with the owner connection. */
interface Landmarks {
  merchantId: string;
  /** The middle subscription by keyset (a deep page starts after it), with its status. */
  middle: { id: string; at: string; status: string };
  /** 90 % down the walk of each status: a filtered deep page far from the filter's first row. */
  deepActive: { id: string; at: string };
  deepPaused: { id: string; at: string };
  middleCharge: { id: string; at: string };
  middleOrder: { id: string; at: string };
  /** The middle of the feed. */
  middleCommit: bigint;
}

interface Read {
  name: string;
  /** The rows a page of this read needs: no scan may read more than twice as many. */
  pageRows: number;
  /**
   * The rows of the largest page this read may ask for (the largest page size, the whole window): what
   * its plan may be made for. A plan estimated for more (a tenth of the merchant, say) is one that
   * grows with the merchant, even where this dataset is still too small for it to read more.
   */
  plannedRows: number;
  run(repositories: Repositories, at: Landmarks): Promise<unknown>;
}

const READS: Read[] = [
  {
    name: "subscriptions, first page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: null, after: null, limit: LIMIT }),
  },
  {
    name: "subscriptions, a deep page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: null, after: at.middle, limit: LIMIT }),
  },
  {
    name: "ACTIVE subscriptions, first page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: "ACTIVE", after: null, limit: LIMIT }),
  },
  {
    name: "subscriptions of one status, a deep page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: at.middle.status, after: at.middle, limit: LIMIT }),
  },
  {
    name: "ACTIVE subscriptions, 90 % down the walk",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: "ACTIVE", after: at.deepActive, limit: LIMIT }),
  },
  {
    name: "PAUSED subscriptions, 90 % down the walk",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: "PAUSED", after: at.deepPaused, limit: LIMIT }),
  },
  {
    name: "PAUSED subscriptions, first page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.subscriptions.list({ merchantId: at.merchantId, status: "PAUSED", after: null, limit: LIMIT }),
  },
  // One subscription, its customer and plan, its two charges.
  { name: "one subscription with its charges", pageRows: 5, plannedRows: 5, run: (r, at) => r.subscriptions.findWithCharges(at.merchantId, at.middle.id) },
  {
    name: "charges, first page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.charges.list({ merchantId: at.merchantId, subscriptionId: null, after: null, limit: LIMIT }),
  },
  {
    name: "charges, a deep page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.charges.list({ merchantId: at.merchantId, subscriptionId: null, after: at.middleCharge, limit: LIMIT }),
  },
  {
    name: "one subscription's charges",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.charges.list({ merchantId: at.merchantId, subscriptionId: at.middle.id, after: null, limit: LIMIT }),
  },
  {
    name: "one subscription's charges, next page",
    pageRows: LIMIT,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.charges.list({ merchantId: at.merchantId, subscriptionId: at.middle.id, after: at.middleCharge, limit: LIMIT }),
  },
  {
    name: "orders, first page",
    pageRows: LIMIT * 3,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.orders.list({ merchantId: at.merchantId, subscriptionId: null, after: null, limit: LIMIT }),
  },
  {
    name: "orders, a deep page",
    pageRows: LIMIT * 3,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.orders.list({ merchantId: at.merchantId, subscriptionId: null, after: at.middleOrder, limit: LIMIT }),
  },
  {
    name: "one subscription's orders",
    pageRows: LIMIT * 3,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.orders.list({ merchantId: at.merchantId, subscriptionId: at.middle.id, after: null, limit: LIMIT }),
  },
  {
    name: "one subscription's orders, next page",
    pageRows: LIMIT * 3,
    plannedRows: MAX_LIST_ROWS,
    run: (r, at) => r.orders.list({ merchantId: at.merchantId, subscriptionId: at.middle.id, after: at.middleOrder, limit: LIMIT }),
  },
  {
    name: "the feed from the start",
    pageRows: EVENT_LIMIT + 1,
    plannedRows: MAX_EVENT_ROWS,
    run: (r, at) => r.events.page({ merchantId: at.merchantId, after: FEED_START, types: null, limit: EVENT_LIMIT, commitWindow: COMMIT_WINDOW }),
  },
  {
    name: "the feed from its middle",
    pageRows: EVENT_LIMIT + 1,
    plannedRows: MAX_EVENT_ROWS,
    run: (r, at) =>
      r.events.page({ merchantId: at.merchantId, after: { position: at.middleCommit, seq: 0n }, types: null, limit: EVENT_LIMIT, commitWindow: COMMIT_WINDOW }),
  },
  {
    // Each commit holds one or two events: the window's commits and their events.
    name: "the feed filtered by a common type",
    pageRows: COMMIT_WINDOW,
    plannedRows: COMMIT_WINDOW,
    run: (r, at) => r.events.page({ merchantId: at.merchantId, after: FEED_START, types: ["order.created"], limit: EVENT_LIMIT, commitWindow: COMMIT_WINDOW }),
  },
  {
    name: "the feed filtered by a type that never occurs (the whole window)",
    pageRows: COMMIT_WINDOW,
    plannedRows: COMMIT_WINDOW,
    run: (r, at) =>
      r.events.page({
        merchantId: at.merchantId,
        after: { position: at.middleCommit, seq: 0n },
        types: ["subscription.deleted"],
        limit: EVENT_LIMIT,
        commitWindow: COMMIT_WINDOW,
      }),
  },
  { name: "the feed's head", pageRows: 1, plannedRows: 1, run: (r, at) => r.events.head(at.merchantId) },
  { name: "the feed's retention horizon", pageRows: 1, plannedRows: 1, run: (r, at) => r.events.purgedThrough(at.merchantId) },
];

/** Every named statement the repositories define. */
const STATEMENT_NAMES = [
  ...Object.values(subscriptionStatements.list).flatMap((variants) => Object.values(variants)),
  subscriptionStatements.getWithCharges,
  ...Object.values(chargeStatements.list).flatMap((variants) => Object.values(variants)),
  ...Object.values(orderStatements.list).flatMap((variants) => Object.values(variants)),
  ...Object.values(eventStatements),
].map((statement) => statement.name);

/**
 * The blocks a scan may touch for what it read: a descent of the index (or a scan's first pages) per
 * loop, one heap block per row and an index leaf per 10 rows (a leaf holds far more), and some slack.
 * A scan that steps over index entries it does not return (an index condition checked entry by entry,
 * not used to position the scan) touches more.
 */
const blocksFor = (scan: Scan) => 4 * scan.loops + 1.1 * scan.rows + 16;

/** The row counts the planner expected of the plan and of each LIMIT in it: the size it was made for. */
function plannedFor(node: PlanNode, into: Array<{ node: string; rows: number }> = []) {
  if (into.length === 0 || node["Node Type"] === "Limit")
    into.push({ node: into.length === 0 ? `${node["Node Type"]} (the plan)` : "Limit", rows: node["Plan Rows"] });
  for (const child of node.Plans ?? []) plannedFor(child, into);
  return into;
}

/** A bound value as a literal of EXECUTE's argument list (the statement's parameter types coerce it). */
function literal(client: pg.PoolClient, value: unknown): string {
  if (value === null) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (Array.isArray(value)) return client.escapeLiteral(`{${value.map((item) => `"${String(item)}"`).join(",")}}`);
  return client.escapeLiteral(String(value));
}

interface QueryConfig {
  name: string;
  text: string;
  values: unknown[];
}

describe.each(tenantMixes(SUBSCRIPTIONS))("the query service's statements with the statistics of $name", (mix) => {
  let database: TestDatabase;
  let pool: Pool;
  let landmarks: Landmarks;
  const covered = new Set<string>();

  beforeAll(async () => {
    database = await createTestDatabase("plans");
    const admin = new pg.Client({ connectionString: database.adminUrl });
    await admin.connect();
    try {
      await loadTenantMix(admin, mix);
      const merchantId = mix.readMerchantId;
      const middle = async (table: string) => {
        const { rows } = await admin.query(
          `SELECT id, created_at::text AS at FROM ${table} WHERE merchant_id = $1 ORDER BY created_at, id OFFSET (SELECT count(*) / 2 FROM ${table} WHERE merchant_id = $1) LIMIT 1`,
          [merchantId],
        );
        return rows[0] as { id: string; at: string };
      };
      const subscription = await middle("subscriptions");
      const deep = async (status: string) => {
        const { rows } = await admin.query(
          `SELECT id, created_at::text AS at FROM subscriptions WHERE merchant_id = $1 AND status = $2::subscription_status ORDER BY created_at, id
            OFFSET (SELECT count(*) * 9 / 10 FROM subscriptions WHERE merchant_id = $1 AND status = $2::subscription_status) LIMIT 1`,
          [merchantId, status],
        );
        // A small merchant may have no row of the status: then the walk starts after its middle row.
        return (rows[0] as { id: string; at: string } | undefined) ?? subscription;
      };
      const status = (await admin.query("SELECT status::text FROM subscriptions WHERE id = $1", [subscription.id])).rows[0].status as string;
      const commit = (await admin.query("SELECT (max(position) + min(position)) / 2 AS middle FROM change_commits WHERE merchant_id = $1", [merchantId]))
        .rows[0];
      landmarks = {
        merchantId,
        middle: { ...subscription, status },
        deepActive: await deep("ACTIVE"),
        deepPaused: await deep("PAUSED"),
        middleCharge: await middle("charges"),
        middleOrder: await middle("orders"),
        middleCommit: BigInt(commit.middle),
      };
    } finally {
      await admin.end();
    }
    // One connection, so the statements prepared by the repositories are the ones EXPLAINed.
    pool = createQueryPool({ connectionString: database.roleUrls.query, max: 1, applicationName: "plans-per-tenant-mix" });
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it.each(READS)("reads O(page) rows for $name", async (read) => {
    const executed: QueryConfig[] = [];
    const recording = new Proxy(pool, {
      get(target, property) {
        if (property !== "query") return Reflect.get(target, property);
        return (config: QueryConfig) => {
          executed.push(config);
          return target.query(config);
        };
      },
    });
    await read.run(
      {
        subscriptions: createSubscriptionRepository(recording),
        charges: createChargeRepository(recording),
        orders: createOrderRepository(recording),
        events: createEventRepository(recording),
      },
      landmarks,
    );
    expect(executed.length).toBeGreaterThan(0);
    const client = await pool.connect();
    try {
      for (const config of executed) {
        expect(config.name).toMatch(/^query_/);
        covered.add(config.name);
        // Past the five executions after which plan_cache_mode=auto would weigh a generic plan too.
        for (let run = 0; run < 5; run++) await client.query(config);
        const args = config.values.map((value) => literal(client, value)).join(", ");
        const explained = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE ${config.name}(${args})`);
        const explain = explained.rows[0]["QUERY PLAN"][0] as { Plan: PlanNode; JIT?: unknown };
        const what = `${config.name} with ${mix.name}`;
        const planScans = scans(explain.Plan);
        expect(planScans.length).toBeGreaterThan(0);
        const tooMany = planScans.filter((scan) => scan.rows > 2 * read.pageRows);
        expect(tooMany, `${what}: scans reading more than 2 × ${read.pageRows} rows`).toEqual([]);
        const steppedOver = planScans.filter((scan) => scan.blocks > blocksFor(scan));
        expect(steppedOver, `${what}: scans touching more blocks than their rows need`).toEqual([]);
        const plannedTooLarge = plannedFor(explain.Plan).filter((estimate) => estimate.rows > read.plannedRows);
        expect(plannedTooLarge, `${what}: planned for more than ${read.plannedRows} rows`).toEqual([]);
        // JIT compilation is chosen by the plan's estimated cost, and costs milliseconds at every execution.
        expect(explain.JIT, `${what}: JIT-compiled`).toBeUndefined();
      }
    } finally {
      client.release();
    }
  });

  it("has run every statement of the repositories", () => {
    expect([...covered].sort()).toEqual([...STATEMENT_NAMES].sort());
  });
});
