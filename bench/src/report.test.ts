import { describe, expect, it } from "vitest";
import { type BenchReport, judgeTargets, renderTables } from "./report.ts";
import type { WebhookResult } from "./webhook-bench.ts";

/** A webhooks-only report in the older format: no host probe, no NATS, receiver or busy cores. */
function olderWebhooksReport(): BenchReport {
  const burst: WebhookResult["burst"] = {
    changes: 20_000,
    arrived: 20_000,
    deliveriesPerSecond: 1_223,
    endToEndSeconds: 16.5,
    changesPerSecond: 1_311,
    relayRowsPerSecond: 3_234,
    cpuUsPerDelivery: { webhook: 486, relay: 167, postgres: 599 },
    peakRssMb: { webhook: 144, relay: 124 },
  };
  return {
    startedAt: "2026-11-25T04:01:40.159Z",
    mode: "full --webhooks-only",
    machine: {
      cores: 2,
      cpuModel: "AMD EPYC",
      node: "20.20.2",
      loadAverageAtStart: [0.76, 0.41, 0.16],
      loadAverageAtEnd: [1, 1, 1],
      sharing: "Cores were shared.",
    },
    settings: { connections: 0, warmupSeconds: 0, runSeconds: 0, repetitions: 0, loadGenerator: "none", serviceLogLevel: "warn" },
    dataset: {
      databaseName: "subdata_bench_s1000000_m100",
      bigMerchantId: "mer_a",
      hooksMerchantId: "mer_b",
      built: false,
      buildSeconds: 0,
      counts: { merchants: 100, subscriptions: 1_000_000, charges: 3_504_817, orders: 2_843_691 },
      depth: 0,
      activeRows: 0,
      subscriptionId: "",
      chargesOfSubscription: 0,
    },
    checks: [],
    http: [],
    depth: undefined,
    paced: undefined,
    webhooks: { latency: { changes: 200, arrived: 200, p50Ms: 13.2, p99Ms: 24.1, maxMs: 30 }, burst, badSignatures: 0 },
    targets: [],
  };
}

describe("renderTables", () => {
  it("renders a result written before the host probe and the burst's whole bill with dashes, not zeros", () => {
    const tables = renderTables(olderWebhooksReport());
    expect(tables).not.toContain("Host probe");
    expect(tables).toContain("| CPU µs per delivery: webhook / relay / postgres / NATS / receiver (bench process) | 486 / 167 / 599 / – / – |");
    expect(tables).toContain("| cores busy during the burst (whole machine, of 2) | – |");
  });

  it("states the host probe in the header and every process's share of a delivery when the run measured them", () => {
    const report = olderWebhooksReport();
    report.machine.wakeProbe = { busyMicros: 126, afterSleepMicros: 270, sleepMs: 10, samples: 200, slowdown: 2.14 };
    report.webhooks!.burst.cpuUsPerDelivery = { webhook: 468, relay: 206, postgres: 531, nats: 53, receiver: 171 };
    report.webhooks!.burst.machineBusyCores = 1.887;
    const tables = renderTables(report);
    expect(tables.split("\n")[0]).toContain("took 270 µs right after a 10 ms sleep and 126 µs warm, after 40 more at once (2.1×, median over 200 rounds)");
    expect(tables).toContain("| 468 / 206 / 531 / 53 / 171 |");
    expect(tables).toContain("| cores busy during the burst (whole machine, of 2) | 1.89 |");
  });

  it("splits the gateway's request time into its steps when the run read the gateway's metrics, and leaves the table out otherwise", () => {
    const report = olderWebhooksReport();
    const run = { requestsPerSecond: 900, p50Ms: 67, p99Ms: 120, cpuUsPerRequest: {}, peakRssMb: {}, non2xx: 0, errors: 0, runs: [] };
    report.http = [
      { ...run, scenario: "list50", description: "first page", target: "baseline" },
      { ...run, scenario: "list50", description: "first page", target: "gateway" },
    ];
    expect(renderTables(report)).not.toContain("Where a request's time went");
    report.http[1]!.gatewaySteps = { requests: 9_000, requestMs: 66, queryQueueMs: 38, queryCallMs: 17, auditWaitMs: 9, readsPerAuditCall: 4.2 };
    expect(renderTables(report)).toContain("| list50, closed loop | 66.0 | 38.0 | 17.0 | 9.0 | 2.0 | 4.2 |");
  });

  it("judges the gateway against the independent floor, and shows the same-SQL baseline beside it", () => {
    const report = olderWebhooksReport();
    const run = (target: "floor" | "baseline" | "gateway", scenario: string, requestsPerSecond: number, p99Ms: number) => ({
      scenario,
      description: scenario,
      target,
      requestsPerSecond,
      p50Ms: 10,
      p99Ms,
      cpuUsPerRequest: { [target]: 100, postgres: 50 },
      peakRssMb: {},
      non2xx: 0,
      errors: 0,
      runs: [],
    });
    report.http = [
      run("floor", "list50", 1000, 40),
      run("baseline", "list50", 900, 45),
      run("gateway", "list50", 800, 70),
      run("floor", "get", 4000, 10),
      run("gateway", "get", 1000, 30),
    ];
    report.targets = judgeTargets(report.http, undefined, undefined);
    const tables = renderTables(report);
    expect(tables).toContain("| list50 | 1,000 | 900 | 800 | 0.80 | 0.89 | 10.0 / 40.0 | 10.0 / 45.0 | 10.0 / 70.0 |");
    expect(tables).toContain("| get | 4,000 | – | 1,000 | 0.25 | – |");
    expect(tables).toContain("| gateway list page ≥ 0.7× the floor's req/s | 0.80× | yes |");
    expect(tables).toContain("| gateway GET /v1/subscriptions/{id} ≥ 0.5× the floor's req/s | 0.25× | **no** |");
    expect(tables).toContain("| gateway list page p99 ≤ 1.5× the floor's, 64 connections, closed loop (saturated) | 70.0 ms (floor 40.0 ms: 1.75×) | **no** |");
    expect(tables).toContain("| gateway list page against the same-SQL baseline (what the architecture costs) | 0.89× | – |");
  });
});
