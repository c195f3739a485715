import { isDeepStrictEqual } from "node:util";
import type pg from "pg";
import { type GatewaySteps, scrapeMetrics, stepsBetween } from "./gateway-steps.ts";
import { type LoadGenerator, type LoadResult, type Pacing, pauseForRate } from "./load-generator.ts";
import { busyCores, machineCpu } from "./machine-cpu.ts";
import { type CpuReadings, cpuReadings, cpuSeconds, cpuSecondsSince, loadAverage, peakRssMb, resetPeakRss, totalOf } from "./proc-stats.ts";
import type { Scenario } from "./scenarios.ts";
import { median, medianOfEach } from "./stats.ts";

/**
 * Which server a scenario is run against: the independent floor (its own SQL and rendering), the
 * baseline (the query service's SQL and renderers without the architecture), or the product.
 */
export type TargetName = "floor" | "baseline" | "gateway";

export interface Target {
  name: TargetName;
  origin: string;
  headers: Record<string, string>;
  /** The gateway's Prometheus endpoint: each run then also reports where its requests' time went. */
  metricsUrl?: string;
}

export interface ProcessRef {
  name: string;
  pid: number;
}

export interface HttpRun {
  repetition: number;
  load: LoadResult;
  /** CPU microseconds per request, per process ("postgres" = the bench database's backends together). */
  cpuUsPerRequest: Record<string, number>;
  /** How many of the machine's cores were busy on average, whoever used them. */
  machineBusyCores: number;
  loadAverage1m: number;
  /** Means per step at the gateway (gateway-steps.ts), for a target with metricsUrl. */
  gatewaySteps?: GatewaySteps;
}

export interface HttpResult {
  scenario: string;
  description: string;
  target: TargetName;
  runs: HttpRun[];
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: Record<string, number>;
  /** Peak RSS per process over warm-up and runs. */
  peakRssMb: Record<string, number>;
  non2xx: number;
  errors: number;
  /** Medians over the runs of the means per step at the gateway, when it was measured. */
  gatewaySteps?: GatewaySteps;
}

export interface HttpBenchOptions {
  scenarios: readonly Scenario[];
  targets: readonly Target[];
  processes: readonly ProcessRef[];
  load: LoadGenerator;
  connections: number;
  warmupSeconds: number;
  runSeconds: number;
  repetitions: number;
  cores: number;
  /** The bench database (admin connection), to find its backends' pids. */
  admin: pg.Pool;
  say(line: string): void;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/** Where a target serves a scenario (the floor's deep page has a cursor of its own). */
function scenarioUrl(scenario: Scenario, target: Target): string {
  return `${target.origin}${scenario.paths?.[target.name] ?? scenario.path}`;
}

/** Every `id` in a response, in document order: the objects served and the order they came in. */
export function idsInOrder(body: unknown, into: string[] = []): string[] {
  if (Array.isArray(body)) for (const item of body) idsInOrder(item, into);
  else if (body !== null && typeof body === "object") {
    for (const [key, value] of Object.entries(body)) {
      if (key === "id" && typeof value === "string") into.push(value);
      else idsInOrder(value, into);
    }
  }
  return into;
}

/** The paths where two JSON values differ (`skip` keys ignored), as "data[0].price.amount". */
export function differingPaths(a: unknown, b: unknown, skip: ReadonlySet<string>, at = "", into: string[] = []): string[] {
  if (isDeepStrictEqual(a, b)) return into;
  const bothObjects = a !== null && b !== null && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b);
  if (!bothObjects) {
    into.push(at || "(the body)");
    return into;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    if (skip.has(key)) continue;
    const path = Array.isArray(a) ? `${at}[${key}]` : at ? `${at}.${key}` : key;
    differingPaths((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], skip, path, into);
  }
  return into;
}

/**
 * One request per scenario and target before any load: each must answer 200; the gateway's JSON must
 * equal the baseline's (otherwise the baseline is not the same page, and the ratio means nothing), and
 * serve the same objects in the same order as the floor (whose cursors are its own; any other
 * difference is named in the check's detail).
 */
export async function checkScenarios(scenarios: readonly Scenario[], targets: readonly Target[]): Promise<Check[]> {
  const checks: Check[] = [];
  for (const scenario of scenarios) {
    const bodies = new Map<TargetName, unknown>();
    for (const target of targets) {
      const response = await fetch(scenarioUrl(scenario, target), { headers: target.headers });
      const text = await response.text();
      const ok = response.status === 200;
      checks.push({
        name: `${scenario.name} via ${target.name} answers 200`,
        ok,
        detail: ok ? `${text.length} bytes` : `status ${response.status}: ${text.slice(0, 300)}`,
      });
      if (ok) bodies.set(target.name, JSON.parse(text));
    }
    if (bodies.has("gateway") && bodies.has("baseline")) {
      const same = isDeepStrictEqual(bodies.get("gateway"), bodies.get("baseline"));
      checks.push({ name: `${scenario.name}: gateway and baseline serve the same JSON`, ok: same, detail: same ? "deep-equal" : "bodies differ" });
    }
    if (bodies.has("gateway") && bodies.has("floor")) {
      const gatewayIds = idsInOrder(bodies.get("gateway"));
      const same = gatewayIds.length > 0 && isDeepStrictEqual(gatewayIds, idsInOrder(bodies.get("floor")));
      const others = differingPaths(bodies.get("gateway"), bodies.get("floor"), new Set(["next_cursor"]));
      checks.push({
        name: `${scenario.name}: gateway and floor serve the same objects in the same order`,
        ok: same,
        detail: `${gatewayIds.length} ids ${same ? "equal" : "differ"}; apart from next_cursor, ${others.length === 0 ? "deep-equal" : `differs at ${others.slice(0, 5).join(", ")}${others.length > 5 ? ", …" : ""}`}`,
      });
    }
  }
  return checks;
}

/**
 * What every load run must show to count: only 200s, and no stall (wrk counts only finished responses,
 * so a server that stalls shows as very few responses, not as errors).
 */
export function loadChecks(label: string, load: { non2xx: number; errors: number; fewestResponses: number }, connections: number): Check[] {
  return [
    { name: `${label}: only 200s under load`, ok: load.non2xx === 0 && load.errors === 0, detail: `${load.non2xx} non-2xx, ${load.errors} errors` },
    {
      name: `${label}: no stall (≥ 1 response per 2 connections per run)`,
      ok: load.fewestResponses >= Math.ceil(connections / 2),
      detail: `fewest responses in a run: ${load.fewestResponses}`,
    },
  ];
}

async function backendPids(admin: pg.Pool): Promise<number[]> {
  const result = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
  return result.rows.map((row) => row.pid);
}

/**
 * CPU microseconds per request of each process, and of Postgres as the sum over its backends: those
 * there before the run, and those a pool opened during it (a pool closes connections idle for 10–30 s,
 * so a server's first run after the others' reconnects; all their CPU was used during the run).
 */
function cpuPerRequest(
  services: CpuReadings<string>,
  backends: CpuReadings<number>,
  openedDuring: readonly number[],
  requests: number,
): Record<string, number> {
  const perRequest: Record<string, number> = {};
  for (const [name, seconds] of cpuSecondsSince(services)) perRequest[name] = (seconds * 1e6) / Math.max(1, requests);
  const opened = openedDuring.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
  perRequest.postgres = ((totalOf(cpuSecondsSince(backends)) + opened) * 1e6) / Math.max(1, requests);
  return perRequest;
}

async function measure(options: HttpBenchOptions, scenario: Scenario, target: Target, repetition: number, pacing?: Pacing): Promise<HttpRun> {
  const backends = await backendPids(options.admin);
  const servicesBefore = cpuReadings(options.processes.map((service) => [service.name, service.pid] as const));
  const backendsBefore = cpuReadings(backends.map((pid) => [pid, pid] as const));
  const metricsBefore = target.metricsUrl ? await scrapeMetrics(target.metricsUrl) : undefined;
  const machineBefore = machineCpu();
  const load = await options.load.run({ url: scenarioUrl(scenario, target), headers: target.headers }, options.connections, options.runSeconds, pacing);
  const machineAfter = machineCpu();
  const openedDuring = (await backendPids(options.admin)).filter((pid) => !backendsBefore.has(pid));
  const cpuUsPerRequest = cpuPerRequest(servicesBefore, backendsBefore, openedDuring, load.requests);
  // After the CPU readings: a scrape costs the gateway a little CPU, which stays out of the figures.
  const metricsAfter = metricsBefore && target.metricsUrl ? await scrapeMetrics(target.metricsUrl) : undefined;
  return {
    repetition,
    load,
    cpuUsPerRequest,
    machineBusyCores: busyCores(machineBefore, machineAfter, options.cores),
    loadAverage1m: loadAverage()[0],
    ...(metricsBefore && metricsAfter ? { gatewaySteps: stepsBetween(metricsBefore, metricsAfter) } : {}),
  };
}

/**
 * Waits (at most `maxMs`) until the stack's processes together use under a tenth of a core. wrk's
 * closed connections do not cancel what a server already queued: after a heavy scenario (64 pages of
 * 200 rows in flight) the gateway path kept working for seconds, and that tail landed in the next run.
 * Returns false when the stack did not settle (the run is then measured anyway, and says so).
 */
async function waitUntilIdle(processes: readonly ProcessRef[], maxMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + maxMs;
  const total = () => processes.reduce((sum, process) => sum + (cpuSeconds(process.pid) ?? 0), 0);
  while (Date.now() < deadline) {
    const before = total();
    await new Promise((resolve) => setTimeout(resolve, 500));
    if ((total() - before) / 0.5 < 0.1) return true;
  }
  return false;
}

/** What a target's runs of one scenario report: medians of rate, latency and CPU; error counts summed. */
function summarizeRuns(runs: readonly HttpRun[]): RunSummary {
  const steps = runs.flatMap((run) => (run.gatewaySteps ? [run.gatewaySteps] : []));
  return {
    ...(steps.length ? { gatewaySteps: medianOfEach<keyof GatewaySteps>(steps) } : {}),
    requestsPerSecond: median(runs.map((run) => run.load.requestsPerSecond)),
    p50Ms: median(runs.map((run) => run.load.p50Ms)),
    p99Ms: median(runs.map((run) => run.load.p99Ms)),
    cpuUsPerRequest: medianOfEach(runs.map((run) => run.cpuUsPerRequest)),
    non2xx: runs.reduce((sum, run) => sum + run.load.non2xx, 0),
    errors: runs.reduce((sum, run) => sum + run.load.errors, 0),
  };
}

/**
 * Every scenario against every target: a warm-up, then `repetitions` runs, alternating targets within
 * each repetition so slow drifts of the shared machine hit both alike, each run starting with the stack
 * idle. Medians are reported.
 */
export async function runHttpBench(options: HttpBenchOptions): Promise<HttpResult[]> {
  const results: HttpResult[] = [];
  for (const scenario of options.scenarios) {
    const runs = new Map<TargetName, HttpRun[]>(options.targets.map((target) => [target.name, []]));
    for (const process of options.processes) resetPeakRss(process.pid);
    for (const target of options.targets) {
      if (options.warmupSeconds > 0)
        await options.load.run({ url: scenarioUrl(scenario, target), headers: target.headers }, options.connections, options.warmupSeconds);
    }
    for (let repetition = 1; repetition <= options.repetitions; repetition++) {
      for (const target of options.targets) {
        if (!(await waitUntilIdle(options.processes))) options.say(`${scenario.name}: the stack was still busy after 20 s; measuring anyway`);
        const run = await measure(options, scenario, target, repetition);
        runs.get(target.name)!.push(run);
        options.say(
          `${scenario.name.padEnd(9)} ${target.name.padEnd(8)} #${repetition}: ${run.load.requestsPerSecond.toFixed(0)} req/s, p50 ${run.load.p50Ms.toFixed(1)} ms, p99 ${run.load.p99Ms.toFixed(1)} ms` +
            (run.load.non2xx || run.load.errors ? `, ${run.load.non2xx} non-2xx, ${run.load.errors} errors` : ""),
        );
      }
    }
    const peaks: Record<string, number> = {};
    for (const process of options.processes) peaks[process.name] = peakRssMb(process.pid) ?? Number.NaN;
    for (const target of options.targets) {
      const targetRuns = runs.get(target.name)!;
      results.push({
        scenario: scenario.name,
        description: scenario.description,
        target: target.name,
        runs: targetRuns,
        ...summarizeRuns(targetRuns),
        peakRssMb: peaks,
      });
    }
  }
  return results;
}

export interface DepthPair {
  repetition: number;
  firstP50Ms: number;
  deepP50Ms: number;
  /** deep ÷ first. */
  ratio: number;
}

export interface DepthComparison {
  target: TargetName;
  /** Seconds per run (as a scenario run). */
  runSeconds: number;
  pairs: DepthPair[];
  /** Median of the pairs' ratios. */
  ratio: number;
  /** Over every run of the comparison: a page answering errors fast must not pass for a fast page. */
  non2xx: number;
  errors: number;
  /** Responses in the run that had the fewest (a stall shows as very few). */
  fewestResponses: number;
}

/**
 * The deep page against the first page, judged in back-to-back pairs on one target. Run as separate
 * scenarios a minute apart, the two p50s also compared the machine with itself a minute later: on this
 * shared 2-core VM the same page moved by ±30 % between scenarios (the deep page read 1.29× and 0.82× of
 * the first in two full runs an hour apart). A pair's two runs follow each other (each after the stack
 * is idle), the order alternates between pairs, and the median of the pairs' ratios is the figure; single
 * pairs still scatter (0.74–1.42× seen), hence `pairs` of them.
 */
export async function compareDepth(options: HttpBenchOptions, first: Scenario, deep: Scenario, target: Target, pairCount: number): Promise<DepthComparison> {
  const pairs: DepthPair[] = [];
  let non2xx = 0;
  let errors = 0;
  let fewestResponses = Number.POSITIVE_INFINITY;
  for (let repetition = 1; repetition <= pairCount; repetition++) {
    const order = repetition % 2 === 1 ? [first, deep] : [deep, first];
    const p50 = new Map<Scenario, number>();
    for (const scenario of order) {
      if (!(await waitUntilIdle(options.processes))) options.say(`depth: the stack was still busy after 20 s; measuring anyway`);
      const run = await measure(options, scenario, target, repetition);
      p50.set(scenario, run.load.p50Ms);
      non2xx += run.load.non2xx;
      errors += run.load.errors;
      fewestResponses = Math.min(fewestResponses, run.load.requests);
    }
    const pair = { repetition, firstP50Ms: p50.get(first)!, deepP50Ms: p50.get(deep)!, ratio: p50.get(deep)! / p50.get(first)! };
    pairs.push(pair);
    options.say(
      `depth     ${target.name.padEnd(8)} #${repetition}: first page p50 ${pair.firstP50Ms.toFixed(1)} ms, deep page p50 ${pair.deepP50Ms.toFixed(1)} ms (${pair.ratio.toFixed(2)}×)`,
    );
  }
  return { target: target.name, runSeconds: options.runSeconds, pairs, ratio: median(pairs.map((pair) => pair.ratio)), non2xx, errors, fewestResponses };
}

/** Medians over a target's runs (errors summed), as summarizeRuns reports them. */
type RunSummary = Pick<HttpResult, "requestsPerSecond" | "p50Ms" | "p99Ms" | "cpuUsPerRequest" | "non2xx" | "errors" | "gatewaySteps">;

export interface PacedRun extends RunSummary {
  target: TargetName;
  runs: HttpRun[];
  fewestResponses: number;
}

export interface PacedLatency {
  scenario: string;
  /**
   * `share` of the baseline's closed-loop requests/s: the rate the mean pause is chosen for. A closed
   * model (a connection waits for its response before pausing again) offers each target a little less,
   * connections ÷ (pause + its latency).
   */
  offeredPerSecond: number;
  share: number;
  meanPauseMs: number;
  /** How the load generator paced the connections (load-generator.ts describePacing). */
  pacing: string;
  results: PacedRun[];
}

/**
 * Latency at a given load rather than at saturation. In a closed loop (no pause between requests) the
 * median latency is connections ÷ throughput by Little's law, so a p99 measured there restates the
 * throughput and says nothing about how long a request waits when the servers have headroom. Here the
 * same connections pause between requests (exponentially with wrk, see load-generator.ts), with one mean
 * pause for every target, chosen for `share` of what the baseline served in its closed-loop runs. Targets alternate
 * within each repetition, each run after the stack is idle, as in runHttpBench.
 */
export async function runPacedLatency(options: HttpBenchOptions, scenario: Scenario, baselineRequestsPerSecond: number, share: number): Promise<PacedLatency> {
  const offeredPerSecond = baselineRequestsPerSecond * share;
  const pacing = pauseForRate(options.connections, offeredPerSecond);
  const runs = new Map<TargetName, HttpRun[]>(options.targets.map((target) => [target.name, []]));
  for (let repetition = 1; repetition <= options.repetitions; repetition++) {
    for (const target of options.targets) {
      if (!(await waitUntilIdle(options.processes))) options.say(`paced: the stack was still busy after 20 s; measuring anyway`);
      const run = await measure(options, scenario, target, repetition, pacing);
      runs.get(target.name)!.push(run);
      options.say(
        `paced     ${target.name.padEnd(8)} #${repetition}: ${run.load.requestsPerSecond.toFixed(0)} req/s (offered ${offeredPerSecond.toFixed(0)}), p50 ${run.load.p50Ms.toFixed(1)} ms, p99 ${run.load.p99Ms.toFixed(1)} ms`,
      );
    }
  }
  const results = options.targets.map((target): PacedRun => {
    const targetRuns = runs.get(target.name)!;
    return { target: target.name, runs: targetRuns, ...summarizeRuns(targetRuns), fewestResponses: Math.min(...targetRuns.map((run) => run.load.requests)) };
  });
  return {
    scenario: scenario.name,
    offeredPerSecond,
    share,
    meanPauseMs: pacing.meanPauseMs,
    pacing: options.load.describePacing(pacing, options.connections),
    results,
  };
}
