import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { subscriptionStatusToDb } from "@subdata/query";
import { createPageTokenCodec, createPool } from "@subdata/runtime";
import { encodeFloorCursor } from "./floor-server.ts";

/** One read the API serves, requested the same way from every server. */
export interface Scenario {
  name: string;
  description: string;
  /** Path and query below the server's origin. */
  path: string;
  /** Where a server needs another path for the same read: the floor's cursors are its own. */
  paths?: Partial<Record<"floor" | "baseline" | "gateway", string>>;
}

export interface ScenarioFacts {
  /** Rows before the deep page's cursor, in the status-filtered walk. */
  depth: number;
  activeRows: number;
  subscriptionId: string;
  chargesOfSubscription: number;
}

const STATUS = "ACTIVE";

/**
 * The five scenarios of the issue, on the big merchant. The deep page's cursor is made the way the
 * query service makes its own (same codec, secret and binding), and the floor's the way the floor makes
 * its own, for the row at `depth` of the ACTIVE walk, so no server walks 100,000 rows to get there.
 */
export async function buildScenarios(input: {
  adminUrl: string;
  merchantId: string;
  pageTokenSecret: string;
  floorCursorSecret: string;
  depth: number;
}): Promise<{ scenarios: Scenario[]; facts: ScenarioFacts }> {
  // The services' pool settings (UTC sessions, timestamps as exact text): the cursor holds exactly what they would.
  const pool = createPool({ connectionString: input.adminUrl, max: 1, applicationName: "subdata-bench" });
  try {
    const status = subscriptionStatusToDb(SubscriptionStatus.ACTIVE) as string;
    const activeRows = Number(
      (await pool.query("SELECT count(*)::int AS n FROM subscriptions WHERE merchant_id = $1 AND status = $2::subscription_status", [input.merchantId, status]))
        .rows[0].n,
    );
    // The full dataset reaches the asked depth; smaller ones go 90 % of the way down their walk.
    const depth = Math.max(1, Math.min(input.depth, Math.floor(activeRows * 0.9)));
    const row = (
      await pool.query<{ created_at: string; id: string }>(
        `SELECT created_at, id FROM subscriptions WHERE merchant_id = $1 AND status = $2::subscription_status
          ORDER BY created_at, id OFFSET $3 LIMIT 1`,
        [input.merchantId, status, depth - 1],
      )
    ).rows[0];
    if (!row) throw new Error(`the big merchant has no ACTIVE row at depth ${depth}`);
    const binding = {
      method: `${SubscriptionService.typeName}/${SubscriptionService.method.listSubscriptions.name}`,
      merchantId: input.merchantId,
      filter: { status },
    };
    const cursor = createPageTokenCodec(input.pageTokenSecret).encode(binding, [row.created_at, row.id]);
    const floorCursor = encodeFloorCursor(input.floorCursorSecret, {
      route: "subscriptions",
      merchantId: input.merchantId,
      filter: STATUS,
      createdAt: row.created_at,
      id: row.id,
    });

    // A typical subscription: the median charge count among the 200 oldest active ones.
    const candidates = (
      await pool.query<{ id: string; charges: number }>(
        `SELECT s.id, (SELECT count(*)::int FROM charges c WHERE c.merchant_id = $1 AND c.subscription_id = s.id) AS charges
           FROM subscriptions s WHERE s.merchant_id = $1 AND s.status = $2::subscription_status ORDER BY s.created_at, s.id LIMIT 200`,
        [input.merchantId, status],
      )
    ).rows.sort((a, b) => a.charges - b.charges);
    const typical = candidates[Math.floor(candidates.length / 2)];
    if (!typical) throw new Error("the big merchant has no ACTIVE subscription");

    const scenarios: Scenario[] = [
      { name: "list50", description: `GET /v1/subscriptions?status=${STATUS}&limit=50 (first page)`, path: `/api/v1/subscriptions?status=${STATUS}&limit=50` },
      {
        name: "list200",
        description: `GET /v1/subscriptions?status=${STATUS}&limit=200 (first page)`,
        path: `/api/v1/subscriptions?status=${STATUS}&limit=200`,
      },
      {
        name: "deep50",
        description: `GET /v1/subscriptions?status=${STATUS}&limit=50, cursor at row ${depth.toLocaleString("en")}`,
        path: `/api/v1/subscriptions?status=${STATUS}&limit=50&cursor=${encodeURIComponent(cursor)}`,
        paths: { floor: `/api/v1/subscriptions?status=${STATUS}&limit=50&cursor=${encodeURIComponent(floorCursor)}` },
      },
      { name: "get", description: `GET /v1/subscriptions/{id} with its ${typical.charges} charges`, path: `/api/v1/subscriptions/${typical.id}` },
      { name: "orders50", description: "GET /v1/orders?limit=50 (first page, with line items)", path: "/api/v1/orders?limit=50" },
    ];
    return { scenarios, facts: { depth, activeRows, subscriptionId: typical.id, chargesOfSubscription: typical.charges } };
  } finally {
    await pool.end();
  }
}
