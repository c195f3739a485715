import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createPool, createServiceTransport, type Pool } from "@subdata/runtime";
import { type Dataset, ensureDataset, roleUrls } from "./dataset.ts";
import { checkScenarios, compareDepth, loadChecks, runHttpBench, runPacedLatency, type Check, type ProcessRef, type Target } from "./http-bench.ts";
import { runLifecycleBench } from "./lifecycle-bench.ts";
import { chooseLoadGenerator } from "./load-generator.ts";
import { type BenchOptions, parseOptions, USAGE } from "./options.ts";
import { loadAverage } from "./proc-stats.ts";
import { idleShare, renderProfileSummary, summarizeProfile } from "./profile-summary.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { judgeTargets, renderTables, writeDocsTable, type BenchReport } from "./report.ts";
import { buildScenarios } from "./scenarios.ts";
import { type BenchSecrets, inventSecrets, startStack } from "./stack.ts";
import { describeWakeProbe, probeWakePenalty, type WakeProbe } from "./wake-probe.ts";
import { runWebhookBench, type WebhookResult } from "./webhook-bench.ts";
import { renderFeedTable, runFeedBench } from "./feed-bench.ts";
import { renderTracingTable, runTracingBench } from "./tracing-bench.ts";

// Wiring only: dataset → stack + receiver → API key → checks → HTTP scenarios → webhooks → report.

/** The paced run offers this share of the baseline's closed-loop list50 rate (headroom left for latency). */
const PACED_SHARE = 0.5;
/** The wake-up probe's sleep: about the gap between requests of one connection at a paced load. */
const WAKE_PROBE_SLEEP_MS = 10;

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const say = (line: string) => process.stdout.write(`${line}\n`);
/** The bench's own pool: it writes bursts of 20,000 changes in one transaction and runs VACUUMs, so the services' 10 s deadline is not its. */
function benchAdminPool(adminUrl: string): Pool {
  return createPool({ connectionString: adminUrl, max: 2, applicationName: "subdata-bench", statementTimeoutMs: 3_600_000 });
}

/** What every closed-loop phase shares: the load generator, the run's shape from the options, the cores, the pool CPU readings use. */
function loadRunSettings(options: BenchOptions, load: Awaited<ReturnType<typeof chooseLoadGenerator>>, admin: Pool) {
  return {
    load,
    connections: options.connections,
    warmupSeconds: options.warmupSeconds,
    runSeconds: options.runSeconds,
    repetitions: options.repetitions,
    cores: cpus().length,
    admin,
    say,
  };
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2), process.env);
  if (options.lifecycleAuditRows !== undefined) return runLifecycleBench(options, repoRoot, say);
  const startedAt = new Date().toISOString();
  const stamp = startedAt.replace(/[:.]/g, "-");
  const loadAverageAtStart = loadAverage();
  say(`bench --${options.mode}: load average ${loadAverageAtStart.join(" ")} on ${cpus().length} cores`);
  // First, while nothing of the bench runs yet.
  const wakeProbe = await probeWakePenalty({ samples: options.wakeProbeSamples, sleepMs: WAKE_PROBE_SLEEP_MS });
  say(describeWakeProbe(wakeProbe));

  const dataset = await ensureDataset(options.databaseUrl, { subscriptions: options.subscriptions, merchants: options.merchants, mix: options.mix }, say);
  const secrets = inventSecrets();
  const roles = await roleUrls(dataset.adminUrl, secrets.dev.SUBDATA_QUERY_DB_PASSWORD);
  if (options.webhooksOnly) return webhooksOnly(options, dataset, secrets, roles, startedAt, stamp, loadAverageAtStart, wakeProbe);
  if (options.feedOnly) return feedOnly(options, dataset, secrets, roles, stamp);
  if (options.tracingOnly) return tracingOnly(options, dataset, secrets, roles, stamp);
  const load = await chooseLoadGenerator(options.loadTool, options.mode !== "smoke", say);
  const profileDir = join(repoRoot, "bench", "results", `profiles-${stamp}`);
  const admin = benchAdminPool(dataset.adminUrl);
  const receiver = await startReceiver();
  say("starting the stack (floor, baseline, query, auth, webhook, relay, gateway)");
  const stack = await startStack({
    repoRoot,
    roleUrls: roles,
    natsUrl: options.natsUrl,
    secrets,
    logLevel: options.logLevel,
    baselineMerchantId: dataset.bigMerchantId,
    ...(options.profile ? { profile: { names: ["gateway", "query", "auth"], dir: profileDir } } : {}),
    say,
  });
  const auth = createServiceTransport({ baseUrl: stack.authUrl, serviceToken: secrets.appToken });
  const apiKeys = createClient(ApiKeyService, auth.transport);
  let keyId = "";
  try {
    const created = await apiKeys.createApiKey({ merchantId: dataset.bigMerchantId, name: `npm run bench ${startedAt}` });
    keyId = created.apiKey?.id ?? "";
    const built = await buildScenarios({
      adminUrl: dataset.adminUrl,
      merchantId: dataset.bigMerchantId,
      pageTokenSecret: secrets.pageTokenSecret,
      floorCursorSecret: secrets.floorCursorSecret,
      depth: options.depth,
    });
    const { facts } = built;
    const scenarios = selectScenarios(built.scenarios, options.scenarios);
    const targets: Target[] = [
      { name: "floor", origin: stack.floorUrl, headers: { authorization: `Bearer ${secrets.baselineKey}` } },
      { name: "baseline", origin: stack.baselineUrl, headers: { authorization: `Bearer ${secrets.baselineKey}` } },
      { name: "gateway", origin: stack.gatewayUrl, headers: { authorization: `Bearer ${created.key}` }, metricsUrl: stack.gatewayMetricsUrl },
    ];
    const checks: Check[] = await checkScenarios(scenarios, targets);
    for (const check of checks.filter((entry) => !entry.ok)) say(`check failed: ${check.name}: ${check.detail}`);
    if (checks.some((check) => !check.ok)) return 1;
    const processes = stack.processes.map(({ name, pid }) => ({ name, pid }));

    if (options.profile) {
      const scenario = scenarios.find((entry) => entry.name === options.profile);
      if (!scenario) throw new Error(`--profile: no scenario "${options.profile}" (${scenarios.map((entry) => entry.name).join(", ")})`);
      await runHttpBench({
        scenarios: [scenario],
        targets: targets.filter((target) => target.name === "gateway"),
        processes,
        ...loadRunSettings(options, load, admin),
        repetitions: 1,
      });
      await apiKeys.revokeApiKey({ merchantId: dataset.bigMerchantId, apiKeyId: keyId }).catch(() => {});
      keyId = "";
      await stack.stop();
      sayProfiles(profileDir);
      return 0;
    }

    const httpOptions = {
      scenarios,
      targets,
      processes,
      ...loadRunSettings(options, load, admin),
    };
    const http = await runHttpBench(httpOptions);
    const firstPage = scenarios.find((scenario) => scenario.name === "list50");
    const deepPage = scenarios.find((scenario) => scenario.name === "deep50");
    const gatewayTarget = targets.find((target) => target.name === "gateway");
    // Five pairs (one for --smoke, which only keeps the harness working).
    const depth =
      firstPage && deepPage && gatewayTarget
        ? await compareDepth(httpOptions, firstPage, deepPage, gatewayTarget, options.mode === "smoke" ? 1 : 5)
        : undefined;
    if (depth) checks.push(...loadChecks("depth pairs", depth, options.connections));
    const baselinePeak = http.find((result) => result.scenario === "list50" && result.target === "baseline")?.requestsPerSecond;
    const paced = firstPage && baselinePeak ? await runPacedLatency(httpOptions, firstPage, baselinePeak, PACED_SHARE) : undefined;
    for (const result of paced?.results ?? []) checks.push(...loadChecks(`paced ${paced!.scenario} via ${result.target}`, result, options.connections));
    for (const result of http) {
      const fewestResponses = Math.min(...result.runs.map((run) => run.load.requests));
      checks.push(...loadChecks(`${result.scenario} via ${result.target}`, { ...result, fewestResponses }, options.connections));
    }
    const webhooks = options.skipWebhooks
      ? undefined
      : await webhookPhase(options, dataset, secrets, {
          admin,
          webhookUrl: stack.webhookUrl,
          receiver,
          processes: processes.filter((process) => ["webhook", "relay"].includes(process.name)),
        });
    if (webhooks) checks.push(...webhookChecks(webhooks));

    const { adminUrl: _adminUrl, ...datasetFacts } = dataset;
    const report: BenchReport = {
      startedAt,
      mode: options.scenarios ? `${options.mode} --scenarios ${scenarios.map((scenario) => scenario.name).join(",")}` : options.mode,
      machine: machineFacts(loadAverageAtStart, wakeProbe, `the load generator (${load.describe}), every service, Postgres and NATS`),
      settings: {
        connections: options.connections,
        warmupSeconds: options.warmupSeconds,
        runSeconds: options.runSeconds,
        repetitions: options.repetitions,
        loadGenerator: load.name,
        serviceLogLevel: options.logLevel,
      },
      dataset: { ...datasetFacts, ...facts },
      checks,
      http,
      depth,
      paced,
      webhooks,
      targets: judgeTargets(http, depth, webhooks, paced),
    };
    const tables = renderTables(report);
    say(`\n${tables}\n`);
    writeResult(options.scenarios ? `${stamp}-scenarios.json` : `${stamp}.json`, report);
    // Smoke runs only keep the harness working, and a subset of scenarios is an A/B run: the docs keep
    // the last whole measurement.
    if (options.mode !== "smoke" && !options.scenarios) {
      writeDocsTable(join(repoRoot, "docs", "benchmarks.md"), tables, dataset.mix);
      say("updated docs/benchmarks.md");
    }
    return verdict(checks);
  } finally {
    if (keyId) await apiKeys.revokeApiKey({ merchantId: dataset.bigMerchantId, apiKeyId: keyId }).catch(() => {});
    auth.close();
    await stack.stop();
    await receiver.close();
    await admin.end();
  }
}

/** The scenarios named by --scenarios, in the harness's order; all of them without it. */
function selectScenarios<T extends { name: string }>(all: readonly T[], names: readonly string[] | undefined): T[] {
  if (!names) return [...all];
  const unknown = names.filter((name) => !all.some((scenario) => scenario.name === name));
  if (unknown.length)
    throw new Error(`--scenarios: no scenario ${unknown.map((name) => `"${name}"`).join(", ")} (${all.map((scenario) => scenario.name).join(", ")})`);
  return all.filter((scenario) => names.includes(scenario.name));
}

/** The webhook phase of either kind of run, against the stack's webhook service and relay. */
function webhookPhase(
  options: BenchOptions,
  dataset: Dataset,
  secrets: BenchSecrets,
  on: { admin: Pool; webhookUrl: string; receiver: Receiver; processes: ProcessRef[] },
): Promise<WebhookResult> {
  return runWebhookBench({
    admin: on.admin,
    adminUrl: dataset.adminUrl,
    webhookUrl: on.webhookUrl,
    serviceToken: secrets.appToken,
    merchantId: dataset.hooksMerchantId,
    receiver: on.receiver,
    latencyChanges: options.latencyChanges,
    burstChanges: options.burstChanges,
    writeSeconds: options.runSeconds,
    processes: on.processes,
    say,
  });
}

function webhookChecks(webhooks: WebhookResult): Check[] {
  return [
    {
      name: "every timed change was delivered",
      ok: webhooks.latency.arrived === webhooks.latency.changes,
      detail: `${webhooks.latency.arrived}/${webhooks.latency.changes}`,
    },
    {
      name: "every burst change was delivered",
      ok: webhooks.burst.arrived >= webhooks.burst.changes,
      detail: `${webhooks.burst.arrived}/${webhooks.burst.changes}`,
    },
    { name: "every delivery carried a valid signature", ok: webhooks.badSignatures === 0, detail: `${webhooks.badSignatures} bad` },
  ];
}

/** The machine as the report states it; `sharers` says what ran on the shared cores. */
function machineFacts(loadAverageAtStart: number[], wakeProbe: WakeProbe, sharers: string): BenchReport["machine"] {
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    node: process.versions.node,
    loadAverageAtStart,
    loadAverageAtEnd: loadAverage(),
    wakeProbe,
    sharing: `Cores were shared, not pinned: ${sharers} ran on the same ${cpus().length} cores, next to whatever else the machine was running (see the load average).`,
  };
}

function writeResult(fileName: string, report: BenchReport | Record<string, unknown>): void {
  const resultsDir = join(repoRoot, "bench", "results");
  mkdirSync(resultsDir, { recursive: true });
  const resultFile = join(resultsDir, fileName);
  writeFileSync(resultFile, `${JSON.stringify(report, null, 2)}\n`);
  say(`wrote ${resultFile}`);
}

/** Prints the failed checks; the exit code. */
function verdict(checks: readonly Check[]): number {
  const failed = checks.filter((check) => !check.ok);
  for (const check of failed) say(`check failed: ${check.name}: ${check.detail}`);
  say(failed.length ? `${failed.length} check(s) failed` : `all ${checks.length} checks passed`);
  return failed.length ? 1 : 0;
}

/** Each profiled process's main thread (the busiest file; the loader thread's is mostly idle), summarised. */
function sayProfiles(profileDir: string): void {
  for (const name of readdirSync(profileDir)) {
    const summaries = readdirSync(join(profileDir, name))
      .filter((file) => file.endsWith(".cpuprofile"))
      .map((file) => summarizeProfile(join(profileDir, name, file), 25))
      .sort((a, b) => idleShare(a) - idleShare(b));
    if (summaries[0]) say(renderProfileSummary(summaries[0]));
  }
}

/**
 * --webhooks-only: the webhook service and the relay, the webhook phase, a result file; docs/ stay as
 * they are. With --profile webhooks, both run with --cpu-prof (start-up and the latency phase are in
 * the profiles too, but the burst dominates them).
 */
async function webhooksOnly(
  options: BenchOptions,
  dataset: Dataset,
  secrets: BenchSecrets,
  roles: Awaited<ReturnType<typeof roleUrls>>,
  startedAt: string,
  stamp: string,
  loadAverageAtStart: number[],
  wakeProbe: WakeProbe,
): Promise<number> {
  const admin = benchAdminPool(dataset.adminUrl);
  const receiver = await startReceiver();
  say("starting the webhook service and the relay");
  const profileDir = join(repoRoot, "bench", "results", `profiles-${stamp}`);
  const stack = await startStack({
    repoRoot,
    roleUrls: roles,
    natsUrl: options.natsUrl,
    secrets,
    logLevel: options.logLevel,
    baselineMerchantId: dataset.bigMerchantId,
    only: ["webhook", "relay"],
    ...(options.profile ? { profile: { names: ["webhook", "relay"], dir: profileDir } } : {}),
    say,
  });
  let code: number;
  try {
    const webhooks = await webhookPhase(options, dataset, secrets, {
      admin,
      webhookUrl: stack.webhookUrl,
      receiver,
      processes: stack.processes.map(({ name, pid }) => ({ name, pid })),
    });
    const checks = webhookChecks(webhooks);
    const { adminUrl: _adminUrl, ...datasetFacts } = dataset;
    const report: BenchReport = {
      startedAt,
      mode: `${options.mode} --webhooks-only`,
      machine: machineFacts(loadAverageAtStart, wakeProbe, "the receiver (in the bench process), the webhook service, the relay, Postgres and NATS"),
      settings: { connections: 0, warmupSeconds: 0, runSeconds: 0, repetitions: 0, loadGenerator: "none", serviceLogLevel: options.logLevel },
      // No HTTP scenarios were built: their facts stay empty.
      dataset: { ...datasetFacts, depth: 0, activeRows: 0, subscriptionId: "", chargesOfSubscription: 0 },
      checks,
      http: [],
      depth: undefined,
      paced: undefined,
      webhooks,
      targets: judgeTargets([], undefined, webhooks),
    };
    // Only the webhook tables: the HTTP ones would be empty.
    const tables = renderTables(report);
    say(`\n${tables.slice(tables.indexOf("| webhook pipeline"))}\n`);
    writeResult(`${stamp}-webhooks.json`, report);
    code = verdict(checks);
  } finally {
    await stack.stop();
    await receiver.close();
    await admin.end();
  }
  // The profiles are written when the processes exit.
  if (options.profile) sayProfiles(profileDir);
  return code;
}

/**
 * --feed: the read path (gateway, query, auth), the change feed's figures, a result file; docs/ stay as
 * they are (docs/benchmarks.md keeps the latest table by hand, with the run it came from).
 */
async function feedOnly(
  options: BenchOptions,
  dataset: Dataset,
  secrets: BenchSecrets,
  roles: Awaited<ReturnType<typeof roleUrls>>,
  stamp: string,
): Promise<number> {
  const load = await chooseLoadGenerator(options.loadTool, options.mode !== "smoke", say);
  const admin = benchAdminPool(dataset.adminUrl);
  say("starting the read path (query, auth, gateway)");
  const stack = await startStack({
    repoRoot,
    roleUrls: roles,
    natsUrl: options.natsUrl,
    secrets,
    logLevel: options.logLevel,
    baselineMerchantId: dataset.bigMerchantId,
    only: ["query", "auth", "gateway"],
    say,
  });
  const auth = createServiceTransport({ baseUrl: stack.authUrl, serviceToken: secrets.appToken });
  try {
    // The second merchant: its rows change here, so the big merchant's pages stay the same for the HTTP runs.
    const merchantId = dataset.hooksMerchantId;
    const created = await createClient(ApiKeyService, auth.transport).createApiKey({ merchantId, name: `npm run bench --feed ${stamp}` });
    const result = await runFeedBench({
      adminUrl: dataset.adminUrl,
      gatewayOrigin: stack.gatewayUrl,
      apiKey: created.key,
      merchantId,
      processes: stack.processes.map(({ name, pid }) => ({ name, pid })),
      ...loadRunSettings(options, load, admin),
      feedEvents: options.feedEvents,
      visibilitySamples: options.latencyChanges,
      catchUpEvents: options.catchUpEvents,
    });
    say(`\n${renderFeedTable(result)}\n`);
    writeResult(`${stamp}-feed.json`, { mode: `${options.mode} --feed`, dataset: dataset.counts, feed: result });
    const failed = result.pages.filter((page) => page.non2xx > 0 || page.errors > 0);
    for (const page of failed) say(`check failed: ${page.scenario}: ${page.non2xx} non-2xx, ${page.errors} errors`);
    return failed.length > 0 ? 1 : 0;
  } finally {
    auth.close();
    await stack.stop();
    await admin.end();
  }
}

/** The read path with OTLP export off, then on (tracing-bench.ts): CPU per request per process, rate, latency. */
async function tracingOnly(
  options: BenchOptions,
  dataset: Dataset,
  secrets: BenchSecrets,
  roles: Awaited<ReturnType<typeof roleUrls>>,
  stamp: string,
): Promise<number> {
  const load = await chooseLoadGenerator(options.loadTool, options.mode !== "smoke", say);
  const admin = benchAdminPool(dataset.adminUrl);
  try {
    const runs = await runTracingBench({
      stackOptions: {
        repoRoot,
        roleUrls: roles,
        natsUrl: options.natsUrl,
        secrets,
        logLevel: options.logLevel,
        baselineMerchantId: dataset.bigMerchantId,
        say,
      },
      scenarios: async () => {
        const built = await buildScenarios({
          adminUrl: dataset.adminUrl,
          merchantId: dataset.bigMerchantId,
          pageTokenSecret: secrets.pageTokenSecret,
          floorCursorSecret: secrets.floorCursorSecret,
          depth: options.depth,
        });
        return selectScenarios(built.scenarios, options.scenarios ?? ["list50", "get"]);
      },
      merchantId: dataset.bigMerchantId,
      bench: loadRunSettings(options, load, admin),
      say,
    });
    say(`\n${renderTracingTable(runs)}\n`);
    for (const run of runs) say(`export ${run.export}: ${run.exportRequests} OTLP requests, ${(run.exportBytes / 1024).toFixed(0)} KiB to the sink`);
    writeResult(`${stamp}-tracing.json`, { mode: `${options.mode} --tracing`, dataset: dataset.counts, loadAverage: loadAverage(), tracing: runs });
    const failed = runs.flatMap((run) => run.results).filter((result) => result.non2xx > 0 || result.errors > 0);
    for (const result of failed) say(`check failed: ${result.scenario}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    const missing = runs.find((run) => run.export === "on" && run.exportRequests === 0);
    if (missing) say("check failed: export on, yet the sink received nothing");
    return failed.length > 0 || missing ? 1 : 0;
  } finally {
    await admin.end();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = (error as Error).message;
    say(message === USAGE ? USAGE : `bench failed: ${(error as Error).stack ?? message}`);
    process.exit(message === USAGE ? 0 : 1);
  },
);
