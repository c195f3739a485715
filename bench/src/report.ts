import { readFileSync, writeFileSync } from "node:fs";
import type { Dataset, TenantMix } from "./dataset.ts";
import type { Check, DepthComparison, HttpResult, PacedLatency } from "./http-bench.ts";
import type { GatewaySteps } from "./gateway-steps.ts";
import type { ScenarioFacts } from "./scenarios.ts";
import { describeWakeProbe, type WakeProbe } from "./wake-probe.ts";
import type { WebhookResult } from "./webhook-bench.ts";

/** Everything one run measured: written as bench/results/<timestamp>.json and rendered as tables. */
export interface BenchReport {
  startedAt: string;
  mode: string;
  machine: {
    cores: number;
    cpuModel: string;
    node: string;
    loadAverageAtStart: number[];
    loadAverageAtEnd: number[];
    /** Absent in results written before the probe existed. */
    wakeProbe?: WakeProbe;
    sharing: string;
  };
  settings: { connections: number; warmupSeconds: number; runSeconds: number; repetitions: number; loadGenerator: string; serviceLogLevel: string };
  /** `mix` is absent in results written before the bench had tenant mixes (they are skewed). */
  dataset: Omit<Dataset, "adminUrl" | "mix"> & { mix?: TenantMix } & ScenarioFacts;
  checks: Check[];
  http: HttpResult[];
  /** The deep page against the first, in back-to-back pairs (absent when a scenario was skipped). */
  depth: DepthComparison | undefined;
  /** The first list page at a paced load below saturation (absent when the scenario was skipped). */
  paced: PacedLatency | undefined;
  webhooks: WebhookResult | undefined;
  targets: TargetVerdict[];
}

export interface TargetVerdict {
  target: string;
  measured: string;
  met: boolean | undefined;
}

/** docs/benchmarks.md keeps the latest table of each mix between its markers (the skewed mix's have no name). */
const docsMarkers = (mix: TenantMix) => {
  const tag = mix === "skewed" ? "results" : `results:${mix}`;
  return { start: `<!-- bench:${tag}:start -->`, end: `<!-- bench:${tag}:end -->` };
};

const MIX_DESCRIPTIONS: Record<TenantMix, string> = {
  skewed: "skewed mix: one merchant holds 30 % (read by the scenarios), one 5 %, the rest share 65 %",
  dominant: "dominant mix: every row in one merchant",
  small: "small mix: rows shared evenly, the scenarios read the first merchant",
};

const fixed = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "–";
const find = (http: readonly HttpResult[], scenario: string, target: string) => http.find((result) => result.scenario === scenario && result.target === target);
const GATEWAY_PATH = ["gateway", "query", "auth"];

export function judgeTargets(
  http: readonly HttpResult[],
  depth: DepthComparison | undefined,
  webhooks: WebhookResult | undefined,
  paced?: PacedLatency,
): TargetVerdict[] {
  const verdicts: TargetVerdict[] = [];
  // Against the independent floor (its own SQL and rendering), as the issue sets them.
  for (const [scenario, label, share] of [
    ["list50", "list page", 0.7],
    ["orders50", "orders page", 0.7],
    ["get", "GET /v1/subscriptions/{id}", 0.5],
  ] as const) {
    const gateway = find(http, scenario, "gateway");
    const floor = find(http, scenario, "floor");
    if (!gateway || !floor) continue;
    const ratio = gateway.requestsPerSecond / floor.requestsPerSecond;
    verdicts.push({ target: `gateway ${label} ≥ ${share}× the floor's req/s`, measured: `${fixed(ratio, 2)}×`, met: ratio >= share });
  }
  const gateway = find(http, "list50", "gateway");
  const floor = find(http, "list50", "floor");
  const baseline = find(http, "list50", "baseline");
  if (gateway && floor) {
    verdicts.push({
      target: "gateway list page p99 ≤ 1.5× the floor's, 64 connections, closed loop (saturated)",
      measured: `${fixed(gateway.p99Ms, 1)} ms (floor ${fixed(floor.p99Ms, 1)} ms: ${fixed(gateway.p99Ms / floor.p99Ms, 2)}×)`,
      met: gateway.p99Ms <= 1.5 * floor.p99Ms,
    });
  }
  if (gateway && baseline) {
    const ratio = gateway.requestsPerSecond / baseline.requestsPerSecond;
    verdicts.push({ target: "gateway list page against the same-SQL baseline (what the architecture costs)", measured: `${fixed(ratio, 2)}×`, met: undefined });
  }
  const pacedGateway = paced?.results.find((result) => result.target === "gateway");
  if (paced && pacedGateway) {
    const others = paced.results.filter((result) => result.target !== "gateway");
    verdicts.push({
      target: `gateway list page p99 ≤ 50 ms with the connections paced (set for ${fixed(paced.share * 100)} % of the baseline's closed-loop rate)`,
      measured:
        `${fixed(pacedGateway.p99Ms, 1)} ms at ${fixed(pacedGateway.requestsPerSecond)} req/s` +
        (others.length
          ? ` (${others.map((result) => `${result.target} ${fixed(result.p99Ms, 1)} ms at ${fixed(result.requestsPerSecond)} req/s`).join(", ")})`
          : ""),
      met: pacedGateway.p99Ms <= 50,
    });
  }
  if (depth) {
    verdicts.push({
      target: "deep page latency ≤ 1.2× first page (gateway p50, back-to-back pairs)",
      measured: `${fixed(depth.ratio, 2)}× (pairs: ${depth.pairs.map((pair) => fixed(pair.ratio, 2)).join(", ")})`,
      met: depth.ratio <= 1.2,
    });
  }
  if (webhooks) {
    verdicts.push({
      target: "change → delivered webhook p99 ≤ 250 ms (idle)",
      measured: `${fixed(webhooks.latency.p99Ms, 1)} ms`,
      met: webhooks.latency.p99Ms <= 250,
    });
    verdicts.push({
      target: "≥ 2,000 deliveries/s sustained",
      measured: `${fixed(webhooks.burst.deliveriesPerSecond)}/s`,
      met: webhooks.burst.deliveriesPerSecond >= 2000,
    });
  }
  const peaks = [...http.flatMap((result) => Object.entries(result.peakRssMb)), ...Object.entries(webhooks?.burst.peakRssMb ?? {})].filter(([, mb]) =>
    Number.isFinite(mb),
  );
  if (peaks.length) {
    const [name, mb] = peaks.reduce((max, entry) => (entry[1] > max[1] ? entry : max));
    verdicts.push({ target: "no process above 200 MB RSS under load", measured: `max ${fixed(mb)} MB (${name})`, met: mb <= 200 });
  }
  return verdicts;
}

/** The tables (Markdown), printed to stdout and put into docs/benchmarks.md. */
export function renderTables(report: BenchReport): string {
  const lines: string[] = [];
  const d = report.dataset;
  lines.push(
    `Run ${report.startedAt}, \`--${report.mode}\`: ${d.counts.subscriptions.toLocaleString("en")} subscriptions, ${d.counts.charges.toLocaleString("en")} charges, ` +
      `${d.counts.orders.toLocaleString("en")} orders, ${d.counts.merchants.toLocaleString("en")} merchants (${MIX_DESCRIPTIONS[d.mix ?? "skewed"]}). ${report.settings.loadGenerator}, ${report.settings.connections} connections, ` +
      `warm-up ${report.settings.warmupSeconds} s, medians of ${report.settings.repetitions} × ${report.settings.runSeconds} s. ` +
      `${report.machine.cores} cores (${report.machine.cpuModel}), Node ${report.machine.node}; load average ${report.machine.loadAverageAtStart.map((v) => v.toFixed(2)).join(" ")} at start. ` +
      report.machine.sharing +
      (report.machine.wakeProbe ? ` ${describeWakeProbe(report.machine.wakeProbe)}` : ""),
    "",
    "| scenario | floor req/s | baseline req/s | gateway req/s | gateway/floor | gateway/baseline | floor p50 / p99 ms | baseline p50 / p99 ms | gateway p50 / p99 ms |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  );
  const scenarios = [...new Set(report.http.map((result) => result.scenario))];
  const rate = (result: HttpResult | undefined) => (result ? fixed(result.requestsPerSecond) : "–");
  const latency = (result: HttpResult | undefined) => (result ? `${fixed(result.p50Ms, 1)} / ${fixed(result.p99Ms, 1)}` : "–");
  const ratio = (a: HttpResult | undefined, b: HttpResult | undefined) => (a && b ? fixed(a.requestsPerSecond / b.requestsPerSecond, 2) : "–");
  for (const scenario of scenarios) {
    const floor = find(report.http, scenario, "floor");
    const base = find(report.http, scenario, "baseline");
    const gate = find(report.http, scenario, "gateway");
    lines.push(
      `| ${(gate ?? base ?? floor)!.description} | ${rate(floor)} | ${rate(base)} | ${rate(gate)} | ${ratio(gate, floor)} | ${ratio(gate, base)} | ` +
        `${latency(floor)} | ${latency(base)} | ${latency(gate)} |`,
    );
  }
  lines.push("", "CPU µs per request per process (medians; postgres = the bench database's backends) and peak RSS MB per process during the scenario:", "");
  lines.push(
    "| scenario | floor | baseline | gateway | query | auth | postgres (floor / baseline / gateway path) | peak RSS MB: floor / baseline / gateway / query / auth |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  );
  for (const scenario of scenarios) {
    const floor = find(report.http, scenario, "floor");
    const base = find(report.http, scenario, "baseline");
    const gate = find(report.http, scenario, "gateway");
    const cpu = (result: HttpResult | undefined, name: string) => (result ? fixed(result.cpuUsPerRequest[name] ?? Number.NaN) : "–");
    const rss = (gate ?? base ?? floor)!.peakRssMb;
    lines.push(
      `| ${scenario} | ${cpu(floor, "floor")} | ${cpu(base, "baseline")} | ${cpu(gate, "gateway")} | ${cpu(gate, "query")} | ${cpu(gate, "auth")} | ` +
        `${cpu(floor, "postgres")} / ${cpu(base, "postgres")} / ${cpu(gate, "postgres")} | ` +
        `${["floor", "baseline", ...GATEWAY_PATH].map((name) => fixed(rss[name] ?? Number.NaN)).join(" / ")} |`,
    );
  }
  if (report.paced) {
    const p = report.paced;
    lines.push(
      "",
      `Paced: ${p.scenario} over ${report.settings.connections} connections, ${p.pacing}; set for ${fixed(p.offeredPerSecond)} req/s ` +
        `(${fixed(p.share * 100)} % of the baseline's closed-loop median above), the same for every server; medians of ${report.settings.repetitions} × ${report.settings.runSeconds} s:`,
      "",
      "| server | req/s served | p50 / p99 ms | CPU µs per request: the server (gateway / query / auth) / postgres |",
      "|---|---:|---:|---:|",
    );
    for (const result of p.results) {
      const cpu = (name: string) => fixed(result.cpuUsPerRequest[name] ?? Number.NaN);
      const processes = result.target === "gateway" ? [...GATEWAY_PATH.map(cpu), cpu("postgres")] : [cpu(result.target), cpu("postgres")];
      lines.push(
        `| ${result.target} | ${fixed(result.requestsPerSecond)} | ${fixed(result.p50Ms, 1)} / ${fixed(result.p99Ms, 1)} | ${processes.join(" / ")} |`,
      );
    }
  }
  const stepRows: Array<[string, GatewaySteps]> = [
    ...report.http.flatMap(
      (result): Array<[string, GatewaySteps]> =>
        result.target === "gateway" && result.gatewaySteps ? [[`${result.scenario}, closed loop`, result.gatewaySteps]] : [],
    ),
    ...(report.paced?.results ?? []).flatMap(
      (result): Array<[string, GatewaySteps]> =>
        result.target === "gateway" && result.gatewaySteps ? [[`${report.paced!.scenario}, paced`, result.gatewaySteps]] : [],
    ),
  ];
  if (stepRows.length) {
    lines.push(
      "",
      "Where a request's time went at the gateway: means per request from the gateway's own metrics (medians over the runs); " +
        "the rest is Fastify, authentication from the key cache, the envelope and sending:",
      "",
      "| scenario | whole request ms | waiting for a query slot | the query call | waiting for the audit record | the rest | reads per audit call |",
      "|---|---:|---:|---:|---:|---:|---:|",
    );
    for (const [label, steps] of stepRows) {
      const rest = steps.requestMs - steps.queryQueueMs - steps.queryCallMs - steps.auditWaitMs;
      lines.push(
        // Means of separately timed steps need not add up exactly: a rounding "-0.0" reads as 0.
        `| ${label} | ${fixed(steps.requestMs, 1)} | ${fixed(steps.queryQueueMs, 1)} | ${fixed(steps.queryCallMs, 1)} | ${fixed(steps.auditWaitMs, 1)} | ${fixed(rest, 1).replace(/^-(0\.0)$/, "$1")} | ${fixed(steps.readsPerAuditCall, 1)} |`,
      );
    }
  }
  if (report.webhooks) {
    const w = report.webhooks;
    lines.push(
      "",
      "| webhook pipeline | figure |",
      "|---|---:|",
      `| change → signed delivery at the receiver, stack idle (${w.latency.arrived}/${w.latency.changes} sequential changes) | p50 ${fixed(w.latency.p50Ms, 1)} ms, p99 ${fixed(w.latency.p99Ms, 1)} ms |`,
      `| sustained deliveries/s (burst of ${w.burst.changes.toLocaleString("en")} changes, ${w.burst.arrived.toLocaleString("en")} arrived) | ${fixed(w.burst.deliveriesPerSecond)} |`,
      `| burst end to end (first commit → last delivery) | ${fixed(w.burst.endToEndSeconds, 1)} s |`,
      `| outbox relay throughput (rows published/s) | ${fixed(w.burst.relayRowsPerSecond)} |`,
      `| CPU µs per delivery: webhook / relay / postgres / NATS / receiver (bench process) | ${["webhook", "relay", "postgres", "nats", "receiver"].map((name) => fixed(w.burst.cpuUsPerDelivery[name] ?? Number.NaN)).join(" / ")} |`,
      `| cores busy during the burst (whole machine, of ${report.machine.cores}) | ${fixed(w.burst.machineBusyCores ?? Number.NaN, 2)} |`,
      `| peak RSS MB during the burst: webhook / relay | ${fixed(w.burst.peakRssMb.webhook ?? Number.NaN)} / ${fixed(w.burst.peakRssMb.relay ?? Number.NaN)} |`,
    );
    if (w.writes)
      lines.push(
        `| captured changes committed/s: ${w.writes.writers} writers, single-row UPDATEs, ${w.writes.merchants === 1 ? "all of one merchant" : `${w.writes.merchants} merchants`} (${fixed(w.writes.seconds, 0)} s) | ${fixed(w.writes.commitsPerSecond)} |`,
      );
  }
  lines.push("", "| target (issue) | measured | met |", "|---|---:|:---:|");
  for (const verdict of report.targets)
    lines.push(`| ${verdict.target} | ${verdict.measured} | ${verdict.met === undefined ? "–" : verdict.met ? "yes" : "**no**"} |`);
  return lines.join("\n");
}

/** Replaces what is between the mix's markers of docs/benchmarks.md (reruns replace, never append). */
export function writeDocsTable(path: string, tables: string, mix: TenantMix): void {
  const { start: startMarker, end: endMarker } = docsMarkers(mix);
  const text = readFileSync(path, "utf8");
  const start = text.indexOf(startMarker);
  const end = text.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`${path} lacks the ${startMarker} … ${endMarker} markers`);
  writeFileSync(path, `${text.slice(0, start + startMarker.length)}\n${tables}\n${text.slice(end)}`);
}
