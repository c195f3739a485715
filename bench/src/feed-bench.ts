import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Pool } from "@subdata/runtime";
import { type HttpResult, type ProcessRef, runHttpBench, type Target } from "./http-bench.ts";
import type { LoadGenerator } from "./load-generator.ts";
import { cpuReadings, cpuSecondsSince } from "./proc-stats.ts";
import { quantile } from "./stats.ts";

/**
 * The change feed's figures (docs/benchmarks.md, "The change feed"): a feed page of 100 events against a
 * list page of 100 subscriptions on the gateway path, the time from a change's commit to a long-polling
 * reader's answer with the stack idle, and the mirror (clients/mirror, a separate process using only the
 * public API) copying a merchant and catching up with its feed.
 */

export interface FeedBenchOptions {
  admin: Pool;
  /** The bench database's superuser URL: the mirror's target database lives on the same server. */
  adminUrl: string;
  gatewayOrigin: string;
  apiKey: string;
  merchantId: string;
  processes: readonly ProcessRef[];
  load: LoadGenerator;
  connections: number;
  warmupSeconds: number;
  runSeconds: number;
  repetitions: number;
  cores: number;
  /** Changes written before the page runs, so the feed page is full. */
  feedEvents: number;
  /** Commit → long-poll answer samples. */
  visibilitySamples: number;
  /** Changes the mirror catches up with after its copy. */
  catchUpEvents: number;
  say(line: string): void;
}

export interface FeedBenchResult {
  pages: HttpResult[];
  /** CPU µs per item (event or subscription) per process, from the same runs. */
  cpuUsPerItem: Record<string, Record<string, number>>;
  visibility: { samples: number; p50Ms: number; p99Ms: number; maxMs: number };
  mirror: {
    subscriptions: number;
    charges: number;
    orders: number;
    copySeconds: number;
    objectsPerSecond: number;
    mirrorCpuSeconds: number;
    catchUpEvents: number;
    catchUpSeconds: number;
    eventsPerSecond: number;
  };
}

const MIRROR_BIN = fileURLToPath(new URL("../../clients/mirror/bin/subdata-mirror.js", import.meta.url));
const PAGE_ITEMS = 100;

/** `count` committed changes of the merchant's subscriptions, 100 rows per transaction, as an app's batch job would write them. */
async function writeChanges(admin: Pool, merchantId: string, count: number): Promise<void> {
  let left = count;
  while (left > 0) {
    const batch = Math.min(100, left);
    await admin.query(
      `UPDATE subscriptions SET quantity = quantity % 9 + 1
        WHERE id IN (SELECT id FROM subscriptions WHERE merchant_id = $1 ORDER BY random() LIMIT $2)`,
      [merchantId, batch],
    );
    left -= batch;
  }
}

async function getJson(url: string, apiKey: string): Promise<{ next_cursor: string; data: unknown[] }> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { next_cursor: string; data: unknown[] };
}

/** Commit → answer of a reader already waiting (wait=30) at the feed's end, one change at a time. */
async function measureVisibility(options: FeedBenchOptions): Promise<FeedBenchResult["visibility"]> {
  const subscription = await options.admin.query<{ id: string }>("SELECT id FROM subscriptions WHERE merchant_id = $1 ORDER BY id LIMIT 1", [
    options.merchantId,
  ]);
  const id = subscription.rows[0]?.id;
  if (!id) throw new Error("the feed merchant has no subscription");
  let cursor = (await getJson(`${options.gatewayOrigin}/api/v1/events?cursor=head`, options.apiKey)).next_cursor;
  const samples: number[] = [];
  const client = await options.admin.connect();
  try {
    while (samples.length < options.visibilitySamples) {
      const answered = getJson(`${options.gatewayOrigin}/api/v1/events?wait=30&limit=10&cursor=${encodeURIComponent(cursor)}`, options.apiKey).then((page) => ({
        page,
        at: performance.now(),
      }));
      // Let the request reach its wait; a change that commits earlier is answered at once and only shortens the figure.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await client.query("BEGIN");
      await client.query("UPDATE subscriptions SET quantity = quantity % 9 + 1 WHERE id = $1", [id]);
      const committing = performance.now();
      await client.query("COMMIT");
      const { page, at } = await answered;
      cursor = page.next_cursor;
      if (page.data.length > 0) samples.push(at - committing);
    }
  } finally {
    client.release();
  }
  return { samples: samples.length, p50Ms: quantile(samples, 0.5), p99Ms: quantile(samples, 0.99), maxMs: Math.max(...samples) };
}

/** Runs the mirror's bin to completion (no --follow) and returns its wall time, CPU seconds and result line. */
async function runMirror(
  options: FeedBenchOptions,
  targetUrl: string,
): Promise<{ seconds: number; cpuSeconds: number; result: { rows: Record<string, number>; events_applied: number } }> {
  const started = performance.now();
  const child = spawn(process.execPath, [MIRROR_BIN, "--api-url", options.gatewayOrigin, "--to", targetUrl, "--schema", "bench_copy", "--json"], {
    env: { PATH: process.env.PATH ?? "", SUBDATA_API_KEY: options.apiKey },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const before = cpuReadings([["mirror", child.pid!] as const]);
  let cpuSeconds = 0;
  // CPU read while the process lives (its /proc entry goes with it).
  const sampler = setInterval(() => {
    cpuSeconds = cpuSecondsSince(before).get("mirror") ?? cpuSeconds;
  }, 200);
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`the mirror exited ${code}: ${stderr.trim().split("\n").slice(-3).join(" | ")}`);
  return { seconds: (performance.now() - started) / 1000, cpuSeconds, result: JSON.parse(stdout.trim().split("\n").at(-1)!) };
}

export async function runFeedBench(options: FeedBenchOptions): Promise<FeedBenchResult> {
  options.say(`feed: writing ${options.feedEvents.toLocaleString("en")} changes of the feed merchant's subscriptions`);
  const start = (await getJson(`${options.gatewayOrigin}/api/v1/events?cursor=head`, options.apiKey)).next_cursor;
  await writeChanges(options.admin, options.merchantId, options.feedEvents);

  const target: Target = { name: "gateway", origin: options.gatewayOrigin, headers: { authorization: `Bearer ${options.apiKey}` } };
  const pages = await runHttpBench({
    scenarios: [
      {
        name: "events100",
        description: `GET /v1/events?limit=${PAGE_ITEMS} (a full page of subscription.updated)`,
        path: `/api/v1/events?limit=${PAGE_ITEMS}&cursor=${encodeURIComponent(start)}`,
      },
      { name: "list100", description: `GET /v1/subscriptions?limit=${PAGE_ITEMS} (first page)`, path: `/api/v1/subscriptions?limit=${PAGE_ITEMS}` },
    ],
    targets: [target],
    processes: options.processes,
    load: options.load,
    connections: options.connections,
    warmupSeconds: options.warmupSeconds,
    runSeconds: options.runSeconds,
    repetitions: options.repetitions,
    cores: options.cores,
    admin: options.admin,
    say: options.say,
  });
  const cpuUsPerItem = Object.fromEntries(
    pages.map((page) => [page.scenario, Object.fromEntries(Object.entries(page.cpuUsPerRequest).map(([name, us]) => [name, us / PAGE_ITEMS]))]),
  );

  options.say(`feed: commit → long-poll answer, ${options.visibilitySamples} changes, stack idle`);
  const visibility = await measureVisibility(options);

  const targetName = `subdata_bench_mirror_${randomBytes(3).toString("hex")}`;
  await options.admin.query(`CREATE DATABASE ${targetName}`);
  const targetUrl = Object.assign(new URL(options.adminUrl), { pathname: `/${targetName}` }).toString();
  try {
    options.say("feed: the mirror's initial copy of the feed merchant through the public API");
    const copy = await runMirror(options, targetUrl);
    const { subscriptions = 0, charges = 0, orders = 0 } = copy.result.rows;
    options.say(`feed: ${options.catchUpEvents.toLocaleString("en")} changes for the mirror to catch up with`);
    await writeChanges(options.admin, options.merchantId, options.catchUpEvents);
    const catchUp = await runMirror(options, targetUrl);
    return {
      pages,
      cpuUsPerItem,
      visibility,
      mirror: {
        subscriptions,
        charges,
        orders,
        copySeconds: copy.seconds,
        objectsPerSecond: (subscriptions + charges + orders) / copy.seconds,
        mirrorCpuSeconds: copy.cpuSeconds,
        catchUpEvents: catchUp.result.events_applied - copy.result.events_applied,
        catchUpSeconds: catchUp.seconds,
        eventsPerSecond: (catchUp.result.events_applied - copy.result.events_applied) / catchUp.seconds,
      },
    };
  } finally {
    await options.admin.query(`DROP DATABASE IF EXISTS ${targetName} WITH (FORCE)`);
  }
}

/** The figures as a Markdown table for docs/benchmarks.md and the console. */
export function renderFeedTable(result: FeedBenchResult): string {
  const byScenario = new Map(result.pages.map((page) => [page.scenario, page]));
  const feed = byScenario.get("events100");
  const list = byScenario.get("list100");
  const total = (record: Record<string, number> | undefined) => Object.values(record ?? {}).reduce((sum, value) => sum + value, 0);
  const row = (name: string, page: HttpResult | undefined) =>
    `| ${name} | ${page?.requestsPerSecond.toFixed(0) ?? "–"} | ${((page?.requestsPerSecond ?? 0) * PAGE_ITEMS).toFixed(0)} | ${page?.p99Ms.toFixed(1) ?? "–"} | ${total(result.cpuUsPerItem[page?.scenario ?? ""]).toFixed(1)} |`;
  const mirror = result.mirror;
  const objects = mirror.subscriptions + mirror.charges + mirror.orders;
  return [
    "| change feed | pages/s | items/s | p99 ms | CPU µs per item, all processes |",
    "|---|---:|---:|---:|---:|",
    row(`events, ${PAGE_ITEMS} per page`, feed),
    row(`subscriptions, ${PAGE_ITEMS} per page`, list),
    "",
    "| figure | value |",
    "|---|---:|",
    `| commit → long-poll answer, p50 / p99 / max (${result.visibility.samples} changes, idle) | ${result.visibility.p50Ms.toFixed(1)} / ${result.visibility.p99Ms.toFixed(1)} / ${result.visibility.maxMs.toFixed(1)} ms |`,
    `| mirror initial copy: ${mirror.subscriptions.toLocaleString("en")} subscriptions, ${mirror.charges.toLocaleString("en")} charges, ${mirror.orders.toLocaleString("en")} orders | ${mirror.copySeconds.toFixed(1)} s (${mirror.objectsPerSecond.toFixed(0)} objects/s, mirror CPU ${mirror.mirrorCpuSeconds.toFixed(1)} s) |`,
    `| the same rate for 1,000,000 subscriptions with this dataset's charges and orders | ${objects > 0 ? (((1_000_000 / mirror.subscriptions) * objects) / mirror.objectsPerSecond / 60).toFixed(1) : "–"} min |`,
    `| mirror catch-up: ${mirror.catchUpEvents.toLocaleString("en")} events | ${mirror.catchUpSeconds.toFixed(1)} s (${mirror.eventsPerSecond.toFixed(0)} events/s) |`,
  ].join("\n");
}
