import type { ClientBase } from "pg";

/** The scans of an EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) plan, and what each read. */

export interface PlanNode {
  "Node Type": string;
  "Plan Rows": number;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Join Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  "Shared Hit Blocks": number;
  "Shared Read Blocks": number;
  Plans?: PlanNode[];
}

const SCANS = new Set(["Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan", "Bitmap Heap Scan", "Tid Scan"]);

export interface Scan {
  scan: string;
  /** Rows read over all its loops, returned or filtered out. */
  rows: number;
  loops: number;
  /** Buffers touched: index entries an index scan steps over without returning them show only here. */
  blocks: number;
}

const blocksOf = (node: PlanNode) => node["Shared Hit Blocks"] + node["Shared Read Blocks"];

/** Each scan of the plan. */
export function scans(node: PlanNode, into: Scan[] = []): Scan[] {
  if (SCANS.has(node["Node Type"])) {
    const perLoop = node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0);
    const on = node["Index Name"] ? `${node["Relation Name"] ?? ""} using ${node["Index Name"]}` : node["Relation Name"];
    into.push({
      scan: `${node["Node Type"]} on ${on}`,
      rows: Math.round(perLoop * node["Actual Loops"]),
      loops: node["Actual Loops"],
      // A node's buffers include those of the subplans it runs (an order's line items): its own are the rest.
      blocks: blocksOf(node) - (node.Plans ?? []).reduce((sum, child) => sum + blocksOf(child), 0),
    });
  }
  for (const child of node.Plans ?? []) scans(child, into);
  return into;
}

/** A node of the plan, any kind (joins and CTE scans too), and the rows it handled over all its loops. */
export interface Handled {
  node: string;
  /** Rows returned or filtered out (a join's pairs it tried and dropped included), over all loops. */
  rows: number;
}

/** The node that handled the most rows: a join of two sides that each look like one row shows here. */
export function busiestNode(node: PlanNode): Handled {
  const own =
    node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Join Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0);
  let busiest: Handled = {
    node: `${node["Node Type"]}${node["Relation Name"] ? ` on ${node["Relation Name"]}` : ""}`,
    rows: Math.round(own * node["Actual Loops"]),
  };
  for (const child of node.Plans ?? []) {
    const candidate = busiestNode(child);
    if (candidate.rows > busiest.rows) busiest = candidate;
  }
  return busiest;
}

/** One statement's EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON). */
export interface Explained {
  Plan: PlanNode;
  /** Present when the statement was JIT-compiled. */
  JIT?: unknown;
}

/**
 * EXPLAIN ANALYZEs `sql` with `values` on `client` in a transaction of its own, after `settings` (the SET
 * LOCAL statements the service's transaction runs, if any), and rolls it back: the statement really runs,
 * and nothing it writes stays.
 */
export async function explainRolledBack(client: Pick<ClientBase, "query">, sql: string, values: unknown[] = [], settings?: string): Promise<Explained> {
  await client.query("BEGIN");
  try {
    if (settings !== undefined) await client.query(settings);
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, values);
    return (rows[0]["QUERY PLAN"] as Explained[])[0]!;
  } finally {
    await client.query("ROLLBACK");
  }
}
