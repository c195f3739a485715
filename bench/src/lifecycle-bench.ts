import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createPool, createServiceTransport, type Pool } from "@subdata/runtime";
import pg from "pg";
import { ensureDataset, roleUrls } from "./dataset.ts";
import { runHttpBench, type HttpResult, type Target } from "./http-bench.ts";
import { chooseLoadGenerator } from "./load-generator.ts";
import type { BenchOptions } from "./options.ts";
import { cpuReadings, cpuSecondsSince, loadAverage, totalOf } from "./proc-stats.ts";
import { buildScenarios } from "./scenarios.ts";
import { inventSecrets, startStack } from "./stack.ts";
import { median, quantile } from "./stats.ts";

// The data-lifecycle bench (`npm run bench -- --lifecycle`): what the audit log costs when it is big
// against when it is empty, what dropping a month costs the read path, and how fast the purges go.
// Wiring and measuring only; every figure comes from the real services, roles and SQL functions.

const LIFECYCLE_DATABASE = "subdata_bench_lifecycle";
/** Months of history the bulk rows spread over, the current one included. */
const HISTORY_MONTHS = 14;
/** Rows per bulk INSERT: short enough transactions, few round trips. */
const BULK_CHUNK = 250_000;
/** The audit rows a list page of 50 records: 50 resource ids (~2.2 kB), as the gateway writes them. */
const PAGE_IDS = 50;
const WARMUP_CALLS = 100;
const INSERT_CALLS = 300;
const READS_PER_CALL = 10;
const LIST_CALLS = 300;
/** The first dropped alone, the rest with reads and audit writes running beside. */
const MONTHS_DROPPED = 4;
const DROPS_ALONE = 2;
const PURGE_ROWS = 200_000;
const DELIVERY_ROWS = 50_000;

type Say = (line: string) => void;

interface AuditCosts {
  /** Postgres CPU (the database's backends) per audit row written. */
  insertPostgresUsPerRow: number;
  /** One RecordReads call of 10 reads (one INSERT), p50 and p99. */
  insertCallP50Ms: number;
  insertCallP99Ms: number;
  /** ListAuditEvents, 50 rows: the big merchant's first page, and pages walking its history. */
  firstPageP50Ms: number;
  firstPageP99Ms: number;
  walkPageP50Ms: number;
  walkPageP99Ms: number;
  /** list50 at the gateway and the baseline (medians of the runs). */
  http: HttpResult[];
  /** gateway ÷ baseline list50 req/s, per repetition and their median. */
  gatewayRatios: number[];
  gatewayRatio: number;
}

interface DropFigures {
  partition: string;
  rows: number;
  bytes: number;
  /** The call that detaches it: the only one audit_events waits for. */
  detachMs: number;
  /** The call that drops the detached table (its files). */
  dropMs: number;
  /** Whether reads and audit writes ran beside it (then its time includes waiting for their locks). */
  underLoad: boolean;
}

interface LifecycleReport {
  startedAt: string;
  machine: { cores: number; loadAverageAtStart: number[]; node: string };
  auditRows: number;
  bulkLoad: { seconds: number; rowsPerSecond: number; tableBytes: number };
  /** Measured in the order full, empty, full, empty (the history parked and restored in between), so drift hits both alike. */
  phases: Array<{ state: "empty" | "full"; costs: AuditCosts }>;
  /** Medians over the phases of each state. */
  empty: AuditCosts;
  full: AuditCosts;
  drops: DropFigures[];
  /** Latency of reads and audit writes running while the months were dropped, against the same probes outside. */
  readPathDuringDrops: { duringMaxMs: number; duringCount: number; outsideP99Ms: number; outsideMaxMs: number; outsideCount: number };
  purges: Array<{ table: string; rows: number; seconds: number; rowsPerSecond: number }>;
}

function databaseUrlFor(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function onServer(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** CPU of the lifecycle database's backends, summed, from before to after `work`. */
async function postgresCpuSeconds(admin: Pool, work: () => Promise<void>): Promise<number> {
  const pids = (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")).rows.map(
    (row) => row.pid,
  );
  const before = cpuReadings(pids.map((pid) => [pid, pid] as const));
  await work();
  return totalOf(cpuSecondsSince(before));
}

/**
 * CREATE DATABASE … TEMPLATE refuses while anyone is connected to the template: another bench run's
 * stack may be reading the same dataset. Tries again for up to ten minutes.
 */
async function copyDatabase(serverUrl: string, template: string, say: Say): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await onServer(serverUrl, `CREATE DATABASE ${LIFECYCLE_DATABASE} TEMPLATE ${template}`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== "55006" || attempt >= 120) throw error;
      if (attempt === 1) say(`${template} is in use (another run?); waiting to copy it`);
      await new Promise((resolve) => setTimeout(resolve, 5_000));
    }
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

export async function runLifecycleBench(options: BenchOptions, repoRoot: string, say: Say): Promise<number> {
  const auditRows = options.lifecycleAuditRows ?? 10_000_000;
  const startedAt = new Date().toISOString();
  const loadAverageAtStart = loadAverage();
  say(`bench --lifecycle: ${auditRows.toLocaleString("en")} audit rows; load average ${loadAverageAtStart.join(" ")} on ${cpus().length} cores`);

  // A dataset of its own, and a copy of it per run: the bulk rows must stay in neither, and the datasets
  // the other modes share must not be migrated or held open by this one.
  const dataset = await ensureDataset(
    options.databaseUrl,
    { subscriptions: options.subscriptions, merchants: options.merchants, mix: "skewed", namePrefix: "subdata_bench_lifecycle_base" },
    say,
  );
  await onServer(options.databaseUrl, `DROP DATABASE IF EXISTS ${LIFECYCLE_DATABASE} WITH (FORCE)`);
  await copyDatabase(options.databaseUrl, dataset.databaseName, say);
  const adminUrl = databaseUrlFor(options.databaseUrl, LIFECYCLE_DATABASE);
  const secrets = inventSecrets();
  const roles = await roleUrls(adminUrl, secrets.dev.SUBDATA_QUERY_DB_PASSWORD);
  const admin = createPool({ connectionString: adminUrl, max: 2, applicationName: "subdata-bench", statementTimeoutMs: 3_600_000 });
  await emptyAuditLog(admin);
  const load = await chooseLoadGenerator(options.loadTool, true, say);
  say("starting baseline, query, auth and gateway");
  const stack = await startStack({
    repoRoot,
    roleUrls: roles,
    natsUrl: options.natsUrl,
    secrets,
    logLevel: options.logLevel,
    baselineMerchantId: dataset.bigMerchantId,
    only: ["baseline", "query", "auth", "gateway"],
    say,
  });
  // Keys and the audit list as the admin tools call them; reads recorded as the gateway records them.
  const transport = createServiceTransport({ baseUrl: stack.authUrl, serviceToken: secrets.appToken }).transport;
  const gatewayTransport = createServiceTransport({ baseUrl: stack.authUrl, serviceToken: secrets.gatewayToken }).transport;
  const apiKeys = createClient(ApiKeyService, transport);
  const auditAdmin = createClient(AuditService, transport);
  const recorder = createClient(AuditService, gatewayTransport);
  const audit = { listAuditEvents: auditAdmin.listAuditEvents.bind(auditAdmin), recordReads: recorder.recordReads.bind(recorder) };
  const merchantId = dataset.bigMerchantId;
  let keyId = "";
  try {
    const created = await apiKeys.createApiKey({ merchantId, name: `npm run bench --lifecycle ${startedAt}` });
    keyId = created.apiKey?.id ?? "";
    const { scenarios } = await buildScenarios({
      adminUrl,
      merchantId,
      pageTokenSecret: secrets.pageTokenSecret,
      floorCursorSecret: secrets.floorCursorSecret,
      depth: 1,
    });
    const list50 = scenarios.filter((scenario) => scenario.name === "list50");
    const targets: Target[] = [
      { name: "baseline", origin: stack.baselineUrl, headers: { authorization: `Bearer ${secrets.baselineKey}` } },
      { name: "gateway", origin: stack.gatewayUrl, headers: { authorization: `Bearer ${created.key}` }, metricsUrl: stack.gatewayMetricsUrl },
    ];
    const processes = stack.processes.map(({ name, pid }) => ({ name, pid }));
    let sequence = 0;
    const read = (resourceIds: number) => ({
      merchantId,
      apiKeyId: keyId,
      requestId: `req_lifecycle_${++sequence}`,
      method: "GET",
      route: "/v1/subscriptions",
      query: "status=ACTIVE&limit=50",
      resourceIds: Array.from({ length: resourceIds }, (_, i) => `sub_${(sequence * 64 + i).toString(16).padStart(32, "0")}`),
      resultCount: resourceIds,
      status: 200,
      clientIp: "198.51.100.20",
      userAgent: "subdata-bench/lifecycle",
    });

    const measureAudit = async (phase: string): Promise<AuditCosts> => {
      // Warm: the services' code compiled, the caches holding what this phase reads.
      for (let call = 0; call < WARMUP_CALLS; call++) {
        await audit.recordReads({ reads: Array.from({ length: READS_PER_CALL }, () => read(PAGE_IDS)) });
        await audit.listAuditEvents({ merchantId, pageSize: 50 });
      }
      say(`${phase}: ${INSERT_CALLS} RecordReads calls of ${READS_PER_CALL} reads (${PAGE_IDS} ids each)`);
      const callMs: number[] = [];
      const cpu = await postgresCpuSeconds(admin, async () => {
        for (let call = 0; call < INSERT_CALLS; call++) {
          const reads = Array.from({ length: READS_PER_CALL }, () => read(PAGE_IDS));
          callMs.push(await timed(() => audit.recordReads({ reads })));
        }
      });
      say(`${phase}: ${LIST_CALLS} ListAuditEvents first pages and ${LIST_CALLS} pages of a walk`);
      const firstMs: number[] = [];
      for (let call = 0; call < LIST_CALLS; call++) firstMs.push(await timed(() => audit.listAuditEvents({ merchantId, pageSize: 50 })));
      const walkMs: number[] = [];
      let pageToken = "";
      for (let call = 0; call < LIST_CALLS; call++) {
        walkMs.push(
          await timed(async () => {
            pageToken = (await audit.listAuditEvents({ merchantId, pageSize: 50, pageToken })).nextPageToken;
          }),
        );
      }
      say(`${phase}: list50, baseline and gateway`);
      const http = await runHttpBench({
        scenarios: list50,
        targets,
        processes,
        load,
        connections: options.connections,
        warmupSeconds: Math.max(1, options.warmupSeconds),
        runSeconds: options.runSeconds,
        repetitions: options.repetitions,
        cores: cpus().length,
        admin,
        say,
      });
      const gateway = http.find((result) => result.target === "gateway")!;
      const baseline = http.find((result) => result.target === "baseline")!;
      const gatewayRatios = gateway.runs.map((run, index) => run.load.requestsPerSecond / (baseline.runs[index]?.load.requestsPerSecond ?? Number.NaN));
      return {
        insertPostgresUsPerRow: (cpu * 1e6) / (INSERT_CALLS * READS_PER_CALL),
        insertCallP50Ms: median(callMs),
        insertCallP99Ms: quantile(callMs, 0.99),
        firstPageP50Ms: median(firstMs),
        firstPageP99Ms: quantile(firstMs, 0.99),
        walkPageP50Ms: median(walkMs),
        walkPageP99Ms: quantile(walkMs, 0.99),
        http,
        gatewayRatios,
        gatewayRatio: median(gatewayRatios),
      };
    };

    const bulkLoad = await loadHistory(admin, auditRows, merchantId, say);
    const phases: LifecycleReport["phases"] = [];
    const history = auditRows.toLocaleString("en");
    phases.push({ state: "full", costs: await measureAudit(`${history} audit rows (1)`) });
    let parked = await parkHistory(admin, say);
    phases.push({ state: "empty", costs: await measureAudit("empty audit log (1)") });
    await restoreHistory(admin, parked, say);
    phases.push({ state: "full", costs: await measureAudit(`${history} audit rows (2)`) });
    parked = await parkHistory(admin, say);
    phases.push({ state: "empty", costs: await measureAudit("empty audit log (2)") });
    await restoreHistory(admin, parked, say);
    const empty = combine(phases.filter((phase) => phase.state === "empty").map((phase) => phase.costs));
    const full = combine(phases.filter((phase) => phase.state === "full").map((phase) => phase.costs));
    const { drops, readPath } = await dropMonths(
      admin,
      roles.maintain,
      { list: () => audit.listAuditEvents({ merchantId, pageSize: 50 }), record: () => audit.recordReads({ reads: [read(PAGE_IDS)] }) },
      say,
    );
    const purges = await measurePurges(admin, roles, say);
    const report: LifecycleReport = {
      startedAt,
      machine: { cores: cpus().length, loadAverageAtStart, node: process.version },
      auditRows,
      bulkLoad,
      phases,
      empty,
      full,
      drops,
      readPathDuringDrops: readPath,
      purges,
    };
    say("");
    for (const line of renderLifecycle(report)) say(line);
    const resultsDir = join(repoRoot, "bench", "results");
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${startedAt.replace(/[:.]/g, "-")}-lifecycle.json`);
    writeFileSync(file, `${JSON.stringify(report, (_key, value: unknown) => (typeof value === "bigint" ? Number(value) : value), 2)}\n`);
    say(`wrote ${file}`);
    const failed = phases.some((phase) => phase.costs.http.some((result) => result.non2xx > 0 || result.errors > 0));
    return failed ? 1 : 0;
  } finally {
    if (keyId) await apiKeys.revokeApiKey({ merchantId, apiKeyId: keyId }).catch(() => {});
    await stack.stop();
    await admin.end();
    await onServer(options.databaseUrl, `DROP DATABASE IF EXISTS ${LIFECYCLE_DATABASE} WITH (FORCE)`).catch(() => {});
  }
}

/** The medians over phases of one state (the HTTP results of the first phase, with every phase's ratios). */
function combine(phases: readonly AuditCosts[]): AuditCosts {
  const of = (pick: (costs: AuditCosts) => number) => median(phases.map(pick));
  const gatewayRatios = phases.flatMap((costs) => costs.gatewayRatios);
  return {
    insertPostgresUsPerRow: of((costs) => costs.insertPostgresUsPerRow),
    insertCallP50Ms: of((costs) => costs.insertCallP50Ms),
    insertCallP99Ms: of((costs) => costs.insertCallP99Ms),
    firstPageP50Ms: of((costs) => costs.firstPageP50Ms),
    firstPageP99Ms: of((costs) => costs.firstPageP99Ms),
    walkPageP50Ms: of((costs) => costs.walkPageP50Ms),
    walkPageP99Ms: of((costs) => costs.walkPageP99Ms),
    http: phases[0]!.http,
    gatewayRatios,
    gatewayRatio: median(gatewayRatios),
  };
}

interface ParkedPartition {
  name: string;
  parkedAs: string;
  /** Postgres timestamptz text; null: unbounded. */
  rangeStart: string | null;
  rangeEnd: string | null;
}

/**
 * Takes every monthly partition out of the audit log (DETACH, renamed aside) and makes fresh empty
 * ones for this month and ahead, in one transaction: the services then write to and read from an
 * empty log, on the same machine minutes apart from the full one.
 */
async function parkHistory(admin: Pool, say: Say): Promise<ParkedPartition[]> {
  const client = await admin.connect();
  try {
    await client.query("BEGIN");
    const { rows } = await client.query<{ partition_name: string; range_start: string | null; range_end: string | null }>(
      "SELECT partition_name, range_start, range_end FROM subdata_audit_partitions() WHERE NOT is_default",
    );
    const parked: ParkedPartition[] = [];
    for (const row of rows) {
      const parkedAs = `${row.partition_name}_parked`;
      await client.query(`ALTER TABLE audit_events DETACH PARTITION ${pg.escapeIdentifier(row.partition_name)}`);
      await client.query(`ALTER TABLE ${pg.escapeIdentifier(row.partition_name)} RENAME TO ${pg.escapeIdentifier(parkedAs)}`);
      parked.push({ name: row.partition_name, parkedAs, rangeStart: row.range_start, rangeEnd: row.range_end });
    }
    await client.query("SELECT subdata_audit_prepare_partitions(3)");
    await client.query("COMMIT");
    await client.query("CHECKPOINT");
    say(`parked ${parked.length} audit partitions: the log is empty`);
    return parked;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Drops the empty log's partitions (bench rows) and attaches the parked ones again. */
async function restoreHistory(admin: Pool, parked: readonly ParkedPartition[], say: Say): Promise<void> {
  const client = await admin.connect();
  try {
    await client.query("BEGIN");
    const { rows } = await client.query<{ partition_name: string }>("SELECT partition_name FROM subdata_audit_partitions() WHERE NOT is_default");
    for (const row of rows) await client.query(`DROP TABLE ${pg.escapeIdentifier(row.partition_name)}`);
    for (const partition of parked) {
      await client.query(`ALTER TABLE ${pg.escapeIdentifier(partition.parkedAs)} RENAME TO ${pg.escapeIdentifier(partition.name)}`);
      const from = partition.rangeStart === null ? "MINVALUE" : client.escapeLiteral(partition.rangeStart);
      const to = partition.rangeEnd === null ? "MAXVALUE" : client.escapeLiteral(partition.rangeEnd);
      await client.query(`ALTER TABLE audit_events ATTACH PARTITION ${pg.escapeIdentifier(partition.name)} FOR VALUES FROM (${from}) TO (${to})`);
    }
    await client.query("COMMIT");
    await client.query("CHECKPOINT");
    say(`restored ${parked.length} audit partitions`);
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * The copy starts with an empty audit log of monthly partitions, as a new installation has: the
 * dataset holds the audit rows of earlier runs (and, migrated from before partitioning, one partition
 * for all of them). Dropped as the owner, a bench database's rows being nobody's history.
 */
async function emptyAuditLog(admin: Pool): Promise<void> {
  const partitions = await admin.query<{ partition_name: string }>("SELECT partition_name FROM subdata_audit_partitions()");
  for (const { partition_name: name } of partitions.rows) await admin.query(`DROP TABLE ${pg.escapeIdentifier(name)}`);
  await admin.query("SELECT subdata_audit_new_partition_table('audit_events_default')");
  await admin.query("ALTER TABLE audit_events ATTACH PARTITION audit_events_default DEFAULT");
  await admin.query("SELECT subdata_audit_prepare_partitions(3)");
}

/**
 * `rows` audit rows over the last HISTORY_MONTHS months, each month's partition made first (as
 * `subdata maintain` would have): 1 % of them the big merchant's, the rest spread over 1,000 others, 5
 * resource ids each (the bulk keeps to ~0.6 kB a row to fit a test machine's disk; the rows the bench
 * writes and reads itself are full 50-id pages). Then VACUUM ANALYZE, as autovacuum would have.
 */
async function loadHistory(admin: Pool, rows: number, merchantId: string, say: Say): Promise<LifecycleReport["bulkLoad"]> {
  const now = new Date();
  const months = Array.from({ length: HISTORY_MONTHS }, (_, i) => {
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (HISTORY_MONTHS - 1 - i), 1));
    const end = new Date(Math.min(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1), now.getTime() - 60_000));
    return { start, end };
  });
  for (const month of months) await admin.query("SELECT subdata_audit_create_partition($1::timestamptz)", [month.start.toISOString()]);
  say(`loading ${rows.toLocaleString("en")} audit rows over ${HISTORY_MONTHS} months`);
  const started = performance.now();
  let loaded = 0;
  for (const [index, month] of months.entries()) {
    const inMonth = Math.floor(rows / HISTORY_MONTHS) + (index < rows % HISTORY_MONTHS ? 1 : 0);
    for (let first = 0; first < inMonth; first += BULK_CHUNK) {
      const count = Math.min(BULK_CHUNK, inMonth - first);
      await admin.query(
        `INSERT INTO audit_events (id, occurred_at, merchant_id, api_key_id, request_id, method, route, query, resource_ids,
           result_count, status, client_ip, user_agent, latency_micros)
         SELECT 'aud_' || md5($1 || ':' || g), $2::timestamptz + (g::float8 / $4) * ($3::timestamptz - $2::timestamptz),
                CASE WHEN g % 100 = 0 THEN $5 ELSE 'mer_bulk' || lpad((g % 1000)::text, 4, '0') END,
                'key_bulk', 'req_' || md5($1 || ':' || g), 'GET', '/v1/subscriptions', 'status=ACTIVE&limit=50',
                ARRAY(SELECT 'sub_' || md5(g || ':' || k) FROM generate_series(1, 5) k), 5, 200, '198.51.100.1', 'bench/lifecycle', 12000
           FROM generate_series($6::int, $7::int) g`,
        [`m${index}`, month.start.toISOString(), month.end.toISOString(), inMonth, merchantId, first + 1, first + count],
      );
      loaded += count;
      say(`  ${loaded.toLocaleString("en")} rows`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  say("VACUUM ANALYZE audit_events, CHECKPOINT");
  await admin.query("VACUUM (ANALYZE) audit_events");
  // The load's dirty pages written out now, not while the next phases measure.
  await admin.query("CHECKPOINT");
  const tableBytes = Number((await admin.query("SELECT sum(bytes)::bigint AS bytes FROM subdata_audit_partition_status()")).rows[0].bytes);
  return { seconds, rowsPerSecond: rows / seconds, tableBytes };
}

/**
 * Drops the MONTHS_DROPPED oldest months as the maintenance role does, one call each, while reads and
 * audit writes run without pause next to it; their latency during the drops against outside them.
 */
async function dropMonths(
  admin: Pool,
  maintainUrl: string,
  readPath: { list: () => Promise<unknown>; record: () => Promise<unknown> },
  say: Say,
): Promise<{ drops: DropFigures[]; readPath: LifecycleReport["readPathDuringDrops"] }> {
  const maintain = createPool({ connectionString: maintainUrl, max: 1, applicationName: "subdata-bench-maintain" });
  const probes: Array<{ at: number; ms: number }> = [];
  let probing = true;
  const probe = async (work: () => Promise<unknown>) => {
    while (probing) {
      const at = performance.now();
      await work();
      probes.push({ at, ms: performance.now() - at });
    }
  };
  let loops: Array<Promise<void>> = [];
  const windows: Array<[number, number]> = [];
  const drops: DropFigures[] = [];
  try {
    for (let i = 0; i < MONTHS_DROPPED; i++) {
      const underLoad = i >= DROPS_ALONE;
      if (i === DROPS_ALONE) {
        loops = [probe(readPath.list), probe(readPath.record)];
        await new Promise((resolve) => setTimeout(resolve, 3_000));
      }
      const oldest = (
        await admin.query<{ partition_name: string; end_epoch: number; approx_rows: string; bytes: string }>(
          `SELECT partition_name, extract(epoch FROM range_end)::float8 AS end_epoch, approx_rows, bytes FROM subdata_audit_partition_status()
            WHERE NOT is_default AND range_end IS NOT NULL ORDER BY range_end LIMIT 1`,
        )
      ).rows[0]!;
      // A retention that makes exactly this month due: its end is this many whole days ago.
      const days = Math.floor((Date.now() - oldest.end_epoch * 1000) / 86_400_000);
      const started = performance.now();
      const detached = (
        await maintain.query<{ partition_name: string }>("SELECT partition_name FROM subdata_audit_detach_expired_partition(make_interval(days => $1))", [days])
      ).rows[0];
      const between = performance.now();
      const dropped = (await maintain.query<{ name: string | null }>("SELECT subdata_audit_drop_detached_partition() AS name")).rows[0]?.name;
      const ended = performance.now();
      if (detached?.partition_name !== oldest.partition_name || dropped !== oldest.partition_name) {
        throw new Error(`expected to detach and drop ${oldest.partition_name}, got ${detached?.partition_name ?? "nothing"} and ${dropped ?? "nothing"}`);
      }
      if (underLoad) windows.push([started, ended]);
      drops.push({
        partition: oldest.partition_name,
        rows: Number(oldest.approx_rows),
        bytes: Number(oldest.bytes),
        detachMs: between - started,
        dropMs: ended - between,
        underLoad,
      });
      say(
        `removed ${oldest.partition_name} (~${Number(oldest.approx_rows).toLocaleString("en")} rows, ${(Number(oldest.bytes) / 1e6).toFixed(0)} MB): ` +
          `detach ${(between - started).toFixed(1)} ms, drop ${(ended - between).toFixed(1)} ms` +
          (underLoad ? ", reads and audit writes running" : ""),
      );
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  } finally {
    probing = false;
    await Promise.all(loops);
    await maintain.end();
  }
  // A probe overlaps a drop if it started before the drop ended and ended after it started.
  const overlaps = (p: { at: number; ms: number }) => windows.some(([start, end]) => p.at < end && p.at + p.ms > start);
  const during = probes.filter(overlaps).map((p) => p.ms);
  const outside = probes.filter((p) => !overlaps(p)).map((p) => p.ms);
  return {
    drops,
    readPath: {
      duringMaxMs: Math.max(0, ...during),
      duringCount: during.length,
      outsideP99Ms: quantile(outside, 0.99),
      outsideMaxMs: Math.max(0, ...outside),
      outsideCount: outside.length,
    },
  };
}

/**
 * The purges' rates, each through its own function and role as in production: published outbox rows
 * (the relay's, batches of 10,000), then finished webhook deliveries with two attempts each and their
 * events (`subdata maintain`'s, batches of 5,000), each run until a batch comes back short.
 */
async function measurePurges(admin: Pool, roles: Record<"webhook" | "maintain", string>, say: Say): Promise<LifecycleReport["purges"]> {
  say(`purges: ${PURGE_ROWS.toLocaleString("en")} published outbox rows, ${DELIVERY_ROWS.toLocaleString("en")} deliveries with 2 attempts each`);
  // Outbox rows reference their change event: the events first (written directly, so no feed position is
  // taken), then one published outbox row each.
  await admin.query(
    `INSERT INTO change_events (id, merchant_id, resource_type, resource_id, event_type, version, occurred_at, payload)
     SELECT 'evt_outbox' || g, 'mer_purge', 'subscription', 'sub_' || (g % 5000), 'subscription.updated', g, now() - interval '8 days',
            jsonb_build_object('object', jsonb_build_object('id', 'sub_' || (g % 5000), 'pad', repeat('x', 1000)))
       FROM generate_series(1, $1::int) g`,
    [PURGE_ROWS],
  );
  await admin.query(
    `INSERT INTO event_outbox (id, merchant_id, resource_id, published_at)
     SELECT 'evt_outbox' || g, 'mer_purge', 'sub_' || (g % 5000), now() - interval '8 days' FROM generate_series(1, $1::int) g`,
    [PURGE_ROWS],
  );
  await admin.query("INSERT INTO merchants (id, name) VALUES ('mer_purge', 'purge bench') ON CONFLICT DO NOTHING");
  await admin.query(
    `INSERT INTO webhook_endpoints (id, merchant_id, url, secret_ciphertext)
     SELECT 'we_purge' || e, 'mer_purge', 'https://example.com/hook', '\\x00'::bytea FROM generate_series(1, 10) e`,
  );
  await admin.query(
    `INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body, received_at)
     SELECT 'evt_purge' || g, 'mer_purge', 'sub_' || g, 'subscription.updated', 1, now() - interval '500 days',
            repeat('x', 1500), now() - interval '500 days'
       FROM generate_series(1, $1::int) g`,
    [DELIVERY_ROWS / 10],
  );
  await admin.query(
    `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, resource_id, version, status, attempt_count, created_at)
     SELECT 'whd_purge' || g, 'mer_purge', 'we_purge' || (g % 10 + 1), 'evt_purge' || (g / 10 + 1), 'sub_' || g, 1, 'SUCCEEDED', 2, now() - interval '100 days'
       FROM generate_series(0, $1::int - 1) g`,
    [DELIVERY_ROWS],
  );
  await admin.query(
    `INSERT INTO webhook_attempts (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body)
     SELECT 'whd_purge' || g, 'mer_purge', a, now() - interval '100 days', 1000, 200, 'NONE', repeat('y', 200)
       FROM generate_series(0, $1::int - 1) g, generate_series(1, 2) a`,
    [DELIVERY_ROWS],
  );
  await admin.query("VACUUM (ANALYZE) event_outbox, webhook_events, webhook_deliveries, webhook_attempts");

  const purge = async (url: string, table: string, statement: string, batch: number) => {
    const pool = createPool({ connectionString: url, max: 1, applicationName: "subdata-bench-purge", statementTimeoutMs: 600_000 });
    try {
      let rows = 0;
      const started = performance.now();
      for (;;) {
        const purged = Number((await pool.query<{ purged: number }>(statement, [batch])).rows[0]!.purged);
        rows += purged;
        if (purged < batch) break;
      }
      const seconds = (performance.now() - started) / 1000;
      say(`  ${table}: ${rows.toLocaleString("en")} rows in ${seconds.toFixed(1)} s`);
      return { table, rows, seconds, rowsPerSecond: rows / seconds };
    } finally {
      await pool.end();
    }
  };
  return [
    await purge(roles.webhook, "event_outbox (published)", "SELECT subdata_purge_published_events(interval '7 days', $1) AS purged", 10_000),
    // Deliveries first here: each takes its two attempts with it (ON DELETE CASCADE).
    await purge(roles.maintain, "webhook_deliveries (+2 attempts each)", "SELECT subdata_purge_webhook_deliveries(interval '90 days', $1) AS purged", 5_000),
    await purge(roles.maintain, "webhook_events", "SELECT subdata_purge_webhook_events(interval '400 days', $1) AS purged", 5_000),
  ];
}

function renderLifecycle(report: LifecycleReport): string[] {
  const f = (value: number, digits = 1) => value.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const row = (label: string, empty: string, full: string) => `| ${label} | ${empty} | ${full} |`;
  const http = (costs: AuditCosts, target: "gateway" | "baseline") => costs.http.find((result) => result.target === target)!;
  const lines = [
    `Run ${report.startedAt}: ${report.auditRows.toLocaleString("en")} audit rows over ${HISTORY_MONTHS} monthly partitions, loaded at ` +
      `${f(report.bulkLoad.rowsPerSecond, 0)} rows/s (${f(report.bulkLoad.tableBytes / 1e9, 2)} GB with indexes). ${report.machine.cores} cores, ` +
      `Node ${report.machine.node}, load average ${report.machine.loadAverageAtStart.join(" ")} at start.`,
    "",
    `Medians over two phases of each state, measured full, empty, full, empty (the history parked and attached again in between).`,
    "",
    `| figure | empty audit log | ${report.auditRows.toLocaleString("en")} rows |`,
    "|---|---:|---:|",
    row("audit insert, Postgres CPU µs per row (50 ids)", f(report.empty.insertPostgresUsPerRow), f(report.full.insertPostgresUsPerRow)),
    row(
      "RecordReads of 10 reads, p50 / p99 ms",
      `${f(report.empty.insertCallP50Ms, 2)} / ${f(report.empty.insertCallP99Ms, 2)}`,
      `${f(report.full.insertCallP50Ms, 2)} / ${f(report.full.insertCallP99Ms, 2)}`,
    ),
    row(
      "ListAuditEvents first page, p50 / p99 ms",
      `${f(report.empty.firstPageP50Ms, 2)} / ${f(report.empty.firstPageP99Ms, 2)}`,
      `${f(report.full.firstPageP50Ms, 2)} / ${f(report.full.firstPageP99Ms, 2)}`,
    ),
    row(
      "ListAuditEvents walking pages, p50 / p99 ms",
      `${f(report.empty.walkPageP50Ms, 2)} / ${f(report.empty.walkPageP99Ms, 2)}`,
      `${f(report.full.walkPageP50Ms, 2)} / ${f(report.full.walkPageP99Ms, 2)}`,
    ),
    row(
      "list50 gateway req/s (baseline req/s), first phase",
      `${f(http(report.empty, "gateway").requestsPerSecond, 0)} (${f(http(report.empty, "baseline").requestsPerSecond, 0)})`,
      `${f(http(report.full, "gateway").requestsPerSecond, 0)} (${f(http(report.full, "baseline").requestsPerSecond, 0)})`,
    ),
    row(
      "list50 gateway ÷ baseline, median (runs)",
      `${f(report.empty.gatewayRatio, 2)} (${report.empty.gatewayRatios.map((r) => f(r, 2)).join(", ")})`,
      `${f(report.full.gatewayRatio, 2)} (${report.full.gatewayRatios.map((r) => f(r, 2)).join(", ")})`,
    ),
    row(
      "list50 gateway p50 / p99 ms, first phase",
      `${f(http(report.empty, "gateway").p50Ms)} / ${f(http(report.empty, "gateway").p99Ms)}`,
      `${f(http(report.full, "gateway").p50Ms)} / ${f(http(report.full, "gateway").p99Ms)}`,
    ),
    row(
      "list50 Postgres CPU µs per gateway request, each phase",
      report.phases
        .filter((phase) => phase.state === "empty")
        .map((phase) => f(phase.costs.http.find((result) => result.target === "gateway")!.cpuUsPerRequest.postgres ?? Number.NaN, 0))
        .join(", "),
      report.phases
        .filter((phase) => phase.state === "full")
        .map((phase) => f(phase.costs.http.find((result) => result.target === "gateway")!.cpuUsPerRequest.postgres ?? Number.NaN, 0))
        .join(", "),
    ),
    "",
    "| month removed | rows (estimate) | MB | reads and audit writes beside it | detach ms | drop ms |",
    "|---|---:|---:|---|---:|---:|",
    ...report.drops.map(
      (drop) =>
        `| ${drop.partition} | ${drop.rows.toLocaleString("en")} | ${f(drop.bytes / 1e6, 0)} | ${drop.underLoad ? "yes" : "no"} | ${f(drop.detachMs)} | ${f(drop.dropMs)} |`,
    ),
    "",
    `Reads and audit writes next to the drops: max ${f(report.readPathDuringDrops.duringMaxMs)} ms over the ${report.readPathDuringDrops.duringCount} that overlapped a drop; ` +
      `p99 ${f(report.readPathDuringDrops.outsideP99Ms)} ms, max ${f(report.readPathDuringDrops.outsideMaxMs)} ms over the ${report.readPathDuringDrops.outsideCount} outside.`,
    "",
    "| purge | rows | s | rows/s |",
    "|---|---:|---:|---:|",
    ...report.purges.map((purge) => `| ${purge.table} | ${purge.rows.toLocaleString("en")} | ${f(purge.seconds)} | ${f(purge.rowsPerSecond, 0)} |`),
  ];
  return lines;
}
