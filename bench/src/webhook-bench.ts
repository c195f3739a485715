import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { setSubscriptionStatus, type SubscriptionStatus } from "@subdata/cli";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createPool, createServiceTransport } from "@subdata/runtime";
import type pg from "pg";
import type { ProcessRef } from "./http-bench.ts";
import { busyCores, machineCpu } from "./machine-cpu.ts";
import { cpuReadings, cpuSecondsSince, peakRssMb, pidsNamed, resetPeakRss, totalOf } from "./proc-stats.ts";
import type { Receiver } from "./receiver.ts";
import { quantile } from "./stats.ts";

/**
 * The webhook pipeline end to end: a subscription change committed in Postgres → trigger-fed outbox
 * → relay → JetStream → webhook service → signed POST at the local receiver.
 */

export interface WebhookResult {
  latency: { changes: number; arrived: number; p50Ms: number; p99Ms: number; maxMs: number };
  burst: {
    changes: number;
    arrived: number;
    /** Deliveries per second between the first and the last arrival. */
    deliveriesPerSecond: number;
    /** From the first change's commit to the last arrival. */
    endToEndSeconds: number;
    /** How fast the burst's UPDATEs (capture triggers included) wrote changes, before their one commit. */
    changesPerSecond: number;
    /** Outbox rows published per second, from their published_at span. */
    relayRowsPerSecond: number;
    /**
     * CPU microseconds per delivery, per process; "postgres" sums the bench database's backends (the
     * writer's excluded), "nats" a nats-server on this machine (absent if none), "receiver" the bench
     * process, which holds the receiver and otherwise only waits.
     */
    cpuUsPerDelivery: Record<string, number>;
    /**
     * How many of the machine's cores were busy (anything on it; steal counts as busy) from the commit
     * until the last delivery arrived. Absent in results written before it was measured.
     */
    machineBusyCores?: number;
    peakRssMb: Record<string, number>;
  };
  badSignatures: number;
  /** Concurrent writers committing captured changes; absent in results written before it was measured. */
  writes?: ConcurrentWrites;
}

export interface ConcurrentWrites {
  writers: number;
  /** The merchants their subscriptions belong to (one in the dominant mix). */
  merchants: number;
  seconds: number;
  /** Captured UPDATEs committed per second, all writers together. */
  commitsPerSecond: number;
}

export interface WebhookBenchOptions {
  admin: pg.Pool;
  /** The bench database as its owner: the concurrent writers' connections. */
  adminUrl: string;
  webhookUrl: string;
  serviceToken: string;
  merchantId: string;
  receiver: Receiver;
  latencyChanges: number;
  burstChanges: number;
  /** How long the concurrent writers commit. */
  writeSeconds: number;
  processes: readonly ProcessRef[];
  say(line: string): void;
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return false;
}

/** Replaces the merchant's endpoints (earlier runs' point at receivers that are gone) with one for `url`. */
async function freshEndpoint(options: WebhookBenchOptions): Promise<{ endpointId: string; remove(): Promise<void>; close(): void }> {
  const { transport, close } = createServiceTransport({ baseUrl: options.webhookUrl, serviceToken: options.serviceToken });
  const endpoints = createClient(WebhookEndpointService, transport);
  let pageToken = "";
  do {
    const page = await endpoints.listEndpoints({ merchantId: options.merchantId, pageSize: 200, pageToken });
    for (const endpoint of page.endpoints) await endpoints.deleteEndpoint({ merchantId: options.merchantId, endpointId: endpoint.id }).catch(() => {});
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  const created = await endpoints.createEndpoint({ merchantId: options.merchantId, url: options.receiver.url, description: "npm run bench receiver" });
  options.receiver.setSecret(created.secret);
  const endpointId = created.endpoint?.id ?? "";
  return {
    endpointId,
    remove: async () => void (await endpoints.deleteEndpoint({ merchantId: options.merchantId, endpointId }).catch(() => {})),
    close,
  };
}

/** The bench database's backends (the services' pools and listeners), to read Postgres CPU per delivery. */
async function backendPids(admin: pg.Pool): Promise<number[]> {
  const result = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name <> 'subdata-bench'",
  );
  return result.rows.map((row) => row.pid);
}

async function pendingOutboxRows(admin: pg.Pool): Promise<number> {
  return Number((await admin.query("SELECT count(*)::int AS n FROM event_outbox WHERE published_at IS NULL")).rows[0].n);
}

/** Sequential changes with small gaps on an idle stack: commit → arrival at the receiver. */
async function measureLatency(options: WebhookBenchOptions, client: pg.PoolClient): Promise<WebhookResult["latency"]> {
  const rows = (
    await client.query<{ id: string; status: SubscriptionStatus }>(
      "SELECT id, status::text AS status FROM subscriptions WHERE merchant_id = $1 ORDER BY id LIMIT $2",
      [options.merchantId, options.latencyChanges],
    )
  ).rows;
  const latencies: number[] = [];
  for (const row of rows) {
    // PAUSED ↔ ACTIVE, as the app would: a real change every time, and the dataset stays valid.
    const change = await setSubscriptionStatus(client, { subscriptionId: row.id, status: row.status === "PAUSED" ? "ACTIVE" : "PAUSED", reason: null });
    const committedAt = performance.now();
    const arrivedAt = await options.receiver.arrival(row.id, change.version, 10_000);
    if (arrivedAt !== undefined) latencies.push(arrivedAt - committedAt);
    await sleep(20 + Math.random() * 20);
  }
  return {
    changes: rows.length,
    arrived: latencies.length,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: quantile(latencies, 1),
  };
}

/**
 * A burst of changes (bulk UPDATEs of 1,000 rows, committed together) and how fast the pipeline drains
 * it. One commit, so that the pipeline's capacity is measured rather than the bench's writer: on a
 * shared 2-core box the capture triggers let the writer commit only ~600–1,000 changes/s, and
 * deliveries/s then showed that figure whatever the pipeline could do (changesPerSecond reports it).
 */
async function measureBurst(options: WebhookBenchOptions, client: pg.PoolClient): Promise<WebhookResult["burst"]> {
  const ids = (await client.query<{ id: string }>("SELECT id FROM subscriptions WHERE merchant_id = $1 ORDER BY id", [options.merchantId])).rows.map(
    (row) => row.id,
  );
  const lastSeq = (await client.query("SELECT coalesce(max(seq), 0)::text AS seq FROM event_outbox")).rows[0].seq as string;
  for (const service of options.processes) resetPeakRss(service.pid);
  options.receiver.reset();
  const startedAt = performance.now();
  let made = 0;
  let offset = 0;
  await client.query("BEGIN");
  try {
    while (made < options.burstChanges) {
      // Round-robin over the merchant's subscriptions; a subscription changes again only in a later
      // statement, so each change is its own event and per-subscription ordering is exercised too.
      const chunk: string[] = [];
      while (chunk.length < Math.min(1_000, options.burstChanges - made) && chunk.length < ids.length) {
        chunk.push(ids[offset % ids.length] as string);
        offset++;
      }
      const result = await client.query("UPDATE subscriptions SET quantity = quantity % 9 + 1 WHERE merchant_id = $1 AND id = ANY($2::text[])", [
        options.merchantId,
        chunk,
      ]);
      made += result.rowCount ?? 0;
    }
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
  // The pipeline sees nothing before the commit: its CPU is counted from here.
  const backends = await backendPids(options.admin);
  const servicesBefore = cpuReadings(options.processes.map((service) => [service.name, service.pid] as const));
  const backendsBefore = cpuReadings(backends.map((pid) => [pid, pid] as const));
  // Every nats-server on this machine (normally the one the stack uses); none when NATS runs elsewhere.
  const natsBefore = cpuReadings(pidsNamed("nats-server").map((pid) => [pid, pid] as const));
  const receiverBefore = process.cpuUsage();
  const machineBefore = machineCpu();
  const writtenAt = performance.now();
  await client.query("COMMIT");
  const committedAt = performance.now();
  // Planner statistics as autovacuum would refresh them: a CI Postgres may run without it, and the
  // webhook tables were last analyzed empty (seed time; deleting the old endpoints cascades), which
  // makes the planner take them for one-row tables. By now the burst has filled them.
  await client.query("ANALYZE webhook_endpoints, webhook_events, webhook_deliveries, webhook_attempts");
  const arrivedAll = await options.receiver.waitForCount(made, Math.max(60_000, made * 10));
  const serviceSeconds = cpuSecondsSince(servicesBefore);
  const machineAfter = machineCpu();
  const receiverUsage = process.cpuUsage(receiverBefore);
  const natsSeconds = totalOf(cpuSecondsSince(natsBefore));
  const postgresSeconds = totalOf(cpuSecondsSince(backendsBefore));
  const arrived = options.receiver.received;
  if (!arrivedAll) options.say(`burst: only ${arrived} of ${made} deliveries arrived in time`);
  const span = options.receiver.firstAt !== undefined && options.receiver.lastAt !== undefined ? options.receiver.lastAt - options.receiver.firstAt : 0;
  const relay = (
    await client.query<{ n: number; span: number | null }>(
      "SELECT count(*)::int AS n, extract(epoch FROM max(published_at) - min(published_at))::float8 AS span FROM event_outbox WHERE seq > $1::bigint AND published_at IS NOT NULL",
      [lastSeq],
    )
  ).rows[0]!;
  const cpuUsPerDelivery: Record<string, number> = {};
  for (const [name, seconds] of serviceSeconds) cpuUsPerDelivery[name] = (seconds * 1e6) / Math.max(1, arrived);
  cpuUsPerDelivery.postgres = (postgresSeconds * 1e6) / Math.max(1, arrived);
  if (natsBefore.size > 0) cpuUsPerDelivery.nats = (natsSeconds * 1e6) / Math.max(1, arrived);
  cpuUsPerDelivery.receiver = (receiverUsage.user + receiverUsage.system) / Math.max(1, arrived);
  return {
    changes: made,
    arrived,
    deliveriesPerSecond: span > 0 ? ((arrived - 1) * 1000) / span : Number.NaN,
    endToEndSeconds: options.receiver.lastAt !== undefined ? (options.receiver.lastAt - committedAt) / 1000 : Number.NaN,
    changesPerSecond: (made * 1000) / (writtenAt - startedAt),
    relayRowsPerSecond: relay.span && relay.span > 0 ? relay.n / relay.span : Number.NaN,
    cpuUsPerDelivery,
    machineBusyCores: busyCores(machineBefore, machineAfter, cpus().length),
    peakRssMb: Object.fromEntries(options.processes.map((service) => [service.name, peakRssMb(service.pid) ?? Number.NaN])),
  };
}

export async function runWebhookBench(options: WebhookBenchOptions): Promise<WebhookResult> {
  const endpoint = await freshEndpoint(options);
  const client = await options.admin.connect();
  try {
    // Start from a quiet pipeline: nothing left in the outbox, nothing still arriving.
    if (!(await waitUntil(async () => (await pendingOutboxRows(options.admin)) === 0, 120_000)))
      options.say("the outbox did not drain within 120 s; measuring anyway");
    // What autovacuum would have done: every run leaves ~20,000 dead rows in each of these tables (the
    // local Postgres runs without autovacuum), and claims then walk dead index entries; after a dozen
    // runs webhook_deliveries held 35 live and 823,160 dead rows, and Postgres CPU per delivery doubled.
    options.say("webhooks: VACUUM (ANALYZE) of the subscription, outbox and webhook tables");
    await client.query("SET statement_timeout = 0");
    // The pool's client-side deadline too (pg.ts): a VACUUM of a large run takes longer than it.
    // (pg honours a per-query query_timeout; its type declarations leave the field out.)
    const vacuum = {
      text: "VACUUM (ANALYZE) subscriptions, event_outbox, webhook_endpoints, webhook_events, webhook_deliveries, webhook_attempts",
      query_timeout: 3_600_000,
    };
    await client.query(vacuum as { text: string });
    await client.query("RESET statement_timeout");
    await sleep(1_000);
    options.receiver.reset();
    options.say(`webhooks: ${options.latencyChanges} sequential changes, stack idle`);
    const latency = await measureLatency(options, client);
    options.say(`webhooks: latency p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms (${latency.arrived}/${latency.changes} arrived)`);
    await sleep(500);
    const latencyBadSignatures = options.receiver.badSignatures;
    options.say(`webhooks: burst of ${options.burstChanges.toLocaleString("en")} changes`);
    const burst = await measureBurst(options, client);
    options.say(
      `webhooks: ${burst.deliveriesPerSecond.toFixed(0)} deliveries/s, relay ${burst.relayRowsPerSecond.toFixed(0)} rows/s (${burst.arrived}/${burst.changes} arrived); ` +
        `the burst's UPDATEs ran at ${burst.changesPerSecond.toFixed(0)} changes/s before their commit; ` +
        `CPU µs per delivery: ${Object.entries(burst.cpuUsPerDelivery)
          .map(([name, us]) => `${name} ${us.toFixed(0)}`)
          .join(", ")}; ` +
        `${(burst.machineBusyCores ?? Number.NaN).toFixed(2)} cores busy`,
    );
    const badSignatures = latencyBadSignatures + options.receiver.badSignatures;
    await endpoint.remove();
    options.say(`webhooks: ${WRITERS} writers committing captured changes for ${options.writeSeconds} s`);
    const writes = await measureConcurrentWrites(options);
    options.say(`webhooks: ${writes.commitsPerSecond.toFixed(0)} captured changes committed/s (${writes.writers} writers, ${writes.merchants} merchants)`);
    return { latency, burst, badSignatures, writes };
  } finally {
    client.release();
    await endpoint.remove();
    endpoint.close();
  }
}

const WRITERS = 16;

/**
 * Captured writes as a merchant's application makes them: WRITERS connections, each committing single-row
 * UPDATEs of its own subscription in a loop, with the pipeline running (the relay publishes every change,
 * ingest stores it; no endpoint is subscribed by now, so nothing is delivered). The subscriptions belong to
 * WRITERS different merchants where the dataset has them, else to the merchants there are: a merchant's
 * commits are positioned one at a time (docs/decisions.md, "The change feed's order is commit order").
 */
async function measureConcurrentWrites(options: WebhookBenchOptions): Promise<ConcurrentWrites> {
  const targets = (
    await options.admin.query<{ merchant_id: string; id: string }>(
      `SELECT m.id AS merchant_id, s.id
         FROM (SELECT id FROM merchants ORDER BY id LIMIT $1) m
         CROSS JOIN LATERAL (SELECT id FROM subscriptions WHERE merchant_id = m.id ORDER BY id LIMIT $1) s`,
      [WRITERS],
    )
  ).rows;
  // One subscription per merchant first, then the merchants' next ones: as many merchants as there are.
  const byMerchant = new Map<string, Array<{ id: string }>>();
  for (const row of targets) byMerchant.set(row.merchant_id, [...(byMerchant.get(row.merchant_id) ?? []), row]);
  const chosen: string[] = [];
  for (let round = 0; chosen.length < WRITERS && round < WRITERS; round++) {
    for (const rows of byMerchant.values()) if (rows[round] && chosen.length < WRITERS) chosen.push(rows[round]!.id);
  }
  const merchants = new Set(targets.filter((row) => chosen.includes(row.id)).map((row) => row.merchant_id)).size;
  const writers = createPool({ connectionString: options.adminUrl, max: chosen.length, applicationName: "subdata-bench-writer" });
  try {
    const connections = await Promise.all(chosen.map(() => writers.connect()));
    let committed = 0;
    const startedAt = performance.now();
    const stopAt = startedAt + options.writeSeconds * 1000;
    await Promise.all(
      connections.map(async (writer, index) => {
        try {
          while (performance.now() < stopAt) {
            await writer.query("UPDATE subscriptions SET quantity = quantity % 9 + 1 WHERE id = $1", [chosen[index]]);
            committed++;
          }
        } finally {
          writer.release();
        }
      }),
    );
    const seconds = (performance.now() - startedAt) / 1000;
    return { writers: chosen.length, merchants, seconds, commitsPerSecond: committed / seconds };
  } finally {
    await writers.end();
  }
}
