import type { TenantMix } from "./dataset.ts";

/** What one `npm run bench` run does; every size and duration follows from the mode. */
export type BenchMode = "full" | "quick" | "smoke";

export interface BenchOptions {
  mode: BenchMode;
  /** Subscriptions across all merchants of the dataset. */
  subscriptions: number;
  merchants: number;
  /** How the rows are spread over merchants (dataset.ts). */
  mix: TenantMix;
  warmupSeconds: number;
  runSeconds: number;
  repetitions: number;
  /** Concurrent connections of the load generator. */
  connections: number;
  /** How deep in the status-filtered walk the "deep page" starts (capped by the dataset). */
  depth: number;
  /** Sequential changes timed end to end (stack idle). */
  latencyChanges: number;
  /** Changes in the burst that measures sustained deliveries/s. */
  burstChanges: number;
  /** Rounds of the host probe (wake-probe.ts): each a sleep, a cold unit of work and warm ones. */
  wakeProbeSamples: number;
  /** "wrk", "autocannon" or undefined (wrk when installed). */
  loadTool: "wrk" | "autocannon" | undefined;
  /**
   * Run only this HTTP scenario against the gateway with --cpu-prof on the gateway and the query service;
   * with --webhooks-only, "webhooks" profiles the webhook service and the relay instead.
   */
  profile: string | undefined;
  /**
   * Only these HTTP scenarios (both targets; depth pairs and the paced run only when their scenarios are
   * among them), no webhook phase, nothing written to docs/: for A/B runs of one change. Undefined: all.
   */
  scenarios: readonly string[] | undefined;
  /** Skip the webhook phase (HTTP only). */
  skipWebhooks: boolean;
  /** Only the webhook phase: no HTTP scenarios, and only the webhook service and the relay are started. */
  webhooksOnly: boolean;
  /** Only the tracing figures (tracing-bench.ts): the read path with OTLP export off, then on. */
  tracingOnly: boolean;
  /** Only the change feed's figures (feed-bench.ts): feed page vs list page, commit → long poll, the mirror. */
  feedOnly: boolean;
  /** Changes written for the feed page, and changes the mirror catches up with (--feed). */
  feedEvents: number;
  catchUpEvents: number;
  /**
   * The data-lifecycle bench instead (lifecycle-bench.ts): the audit log's costs empty and with this many
   * rows, dropping a month, and the purges' rates. Undefined: the HTTP and webhook bench.
   */
  lifecycleAuditRows: number | undefined;
  /** Server holding the bench database (a superuser connection: the seed bulk-loads without triggers). */
  databaseUrl: string;
  natsUrl: string;
  /** Log level of the services during the run (per-request logging would be measured too). */
  logLevel: string;
}

const MODES: Record<
  BenchMode,
  Omit<
    BenchOptions,
    | "mix"
    | "loadTool"
    | "profile"
    | "scenarios"
    | "skipWebhooks"
    | "webhooksOnly"
    | "feedOnly"
    | "tracingOnly"
    | "lifecycleAuditRows"
    | "databaseUrl"
    | "natsUrl"
    | "logLevel"
  >
> = {
  full: {
    mode: "full",
    subscriptions: 1_000_000,
    merchants: 100,
    warmupSeconds: 3,
    runSeconds: 10,
    repetitions: 3,
    connections: 64,
    depth: 100_000,
    latencyChanges: 200,
    burstChanges: 20_000,
    wakeProbeSamples: 200,
    feedEvents: 20_000,
    catchUpEvents: 100_000,
  },
  quick: {
    mode: "quick",
    subscriptions: 100_000,
    merchants: 100,
    warmupSeconds: 3,
    runSeconds: 5,
    repetitions: 3,
    connections: 64,
    depth: 100_000,
    latencyChanges: 200,
    burstChanges: 20_000,
    wakeProbeSamples: 200,
    feedEvents: 5_000,
    catchUpEvents: 30_000,
  },
  smoke: {
    mode: "smoke",
    subscriptions: 2_000,
    merchants: 4,
    warmupSeconds: 0,
    runSeconds: 1,
    repetitions: 1,
    connections: 8,
    depth: 100_000,
    latencyChanges: 5,
    burstChanges: 100,
    wakeProbeSamples: 20,
    feedEvents: 200,
    catchUpEvents: 300,
  },
};

export const USAGE = `npm run bench [-- options]
  (default)            1,000,000 subscriptions across 100 merchants, runs of 10 s × 3
  --quick              100,000 subscriptions, runs of 5 s × 3
  --smoke              a tiny dataset and 1 s runs: checks that every scenario answers 200 and webhooks arrive
  --subscriptions N    override the dataset size        --connections N   load-generator connections (64)
  --seconds N          seconds per run                  --repetitions N   runs per scenario (medians reported)
  --mix skewed|dominant|small   how rows spread over merchants: the skewed hundred (default), all in one
                       merchant, or at least 10,000 equal ones; each mix has its own dataset and table in docs/
  --tool wrk|autocannon                                 --no-webhooks     HTTP scenarios only
  --webhooks-only      the webhook phase only (webhook service and relay; nothing written to docs/)
  --feed               the change feed only: feed page vs list page, commit → long-poll answer, the mirror's
                       copy and catch-up (figures printed and in the result file; nothing written to docs/)
  --tracing            what tracing costs per request: the read path (query, auth, gateway) with OTLP export off,
                       then on (to a local sink); with --scenarios, those (default list50, get); nothing written to docs/
  --scenarios A,B      only these HTTP scenarios, both servers (list50, list200, deep50, get, orders50); depth
                       pairs with list50 and deep50, the paced run with list50; no webhooks, nothing written to docs/
  --profile SCENARIO   only SCENARIO against the gateway, with --cpu-prof on the gateway and the query service
  --webhooks-only --profile webhooks   the webhook phase with --cpu-prof on the webhook service and the relay
  --lifecycle          the data-lifecycle bench: audit insert, ListAuditEvents and list50 (gateway ÷ baseline) with an
                       empty audit log and with --audit-rows rows (10,000,000), dropping a month, purge rates
                       (the smoke dataset unless --subscriptions; nothing written to docs/)
env: DATABASE_URL (server of the bench database, default postgres://postgres@127.0.0.1:5432/postgres),
     NATS_URL (default nats://127.0.0.1:4222), BENCH_LOG_LEVEL (services' log level, default warn)`;

function positive(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} takes a positive number, got "${text ?? ""}"`);
  return value;
}

export function parseOptions(argv: readonly string[], environment: NodeJS.ProcessEnv): BenchOptions {
  let mode: BenchMode = "full";
  const overrides: Partial<BenchOptions> = {};
  let loadTool: BenchOptions["loadTool"];
  let profile: string | undefined;
  let scenarios: string[] | undefined;
  let skipWebhooks = false;
  let webhooksOnly = false;
  let lifecycle = false;
  let auditRows: number | undefined;
  let feedOnly = false;
  let tracingOnly = false;
  let mix: TenantMix = "skewed";
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const next = () => argv[++i];
    switch (arg) {
      case "--quick":
        mode = "quick";
        break;
      case "--smoke":
        mode = "smoke";
        break;
      case "--subscriptions":
        overrides.subscriptions = Math.floor(positive(arg, next()));
        break;
      case "--connections":
        overrides.connections = Math.floor(positive(arg, next()));
        break;
      case "--seconds":
        overrides.runSeconds = positive(arg, next());
        break;
      case "--repetitions":
        overrides.repetitions = Math.floor(positive(arg, next()));
        break;
      case "--scenarios": {
        scenarios = (next() ?? "")
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name.length > 0);
        if (scenarios.length === 0) throw new Error("--scenarios takes a comma-separated list of scenario names");
        break;
      }
      case "--mix": {
        const value = next();
        if (value !== "skewed" && value !== "dominant" && value !== "small") throw new Error(`--mix takes skewed, dominant or small, got "${value ?? ""}"`);
        mix = value;
        break;
      }
      case "--no-webhooks":
        skipWebhooks = true;
        break;
      case "--webhooks-only":
        webhooksOnly = true;
        break;
      case "--lifecycle":
        lifecycle = true;
        break;
      case "--audit-rows":
        auditRows = Math.floor(positive(arg, next()));
        break;
      case "--feed":
        feedOnly = true;
        break;
      case "--tracing":
        tracingOnly = true;
        break;
      case "--profile":
        profile = next();
        if (!profile) throw new Error("--profile takes a scenario name");
        break;
      case "--tool": {
        const tool = next();
        if (tool !== "wrk" && tool !== "autocannon") throw new Error(`--tool takes wrk or autocannon, got "${tool ?? ""}"`);
        loadTool = tool;
        break;
      }
      case "--help":
      case "-h":
        throw new Error(USAGE);
      default:
        throw new Error(`unknown option "${arg}"\n${USAGE}`);
    }
  }
  if (skipWebhooks && webhooksOnly) throw new Error("--no-webhooks and --webhooks-only exclude each other");
  if (feedOnly && (webhooksOnly || scenarios || profile !== undefined)) throw new Error("--feed excludes --webhooks-only, --scenarios and --profile");
  if (tracingOnly && (webhooksOnly || feedOnly || lifecycle || profile !== undefined))
    throw new Error("--tracing excludes --webhooks-only, --feed, --lifecycle and --profile");
  if (scenarios && (webhooksOnly || profile !== undefined)) throw new Error("--scenarios excludes --webhooks-only and --profile");
  if (webhooksOnly && profile !== undefined && profile !== "webhooks") throw new Error('with --webhooks-only, --profile takes only "webhooks"');
  if (auditRows !== undefined && !lifecycle) throw new Error("--audit-rows goes with --lifecycle");
  if (lifecycle && (scenarios || webhooksOnly || feedOnly || profile !== undefined || skipWebhooks)) {
    throw new Error("--lifecycle excludes --scenarios, --webhooks-only, --feed, --no-webhooks and --profile");
  }
  // The lifecycle bench reads one small merchant walk: the smoke dataset is enough unless a size is asked for.
  if (lifecycle && overrides.subscriptions === undefined && mode === "full")
    Object.assign(overrides, { subscriptions: MODES.smoke.subscriptions, merchants: MODES.smoke.merchants });
  return {
    ...MODES[mode],
    ...overrides,
    mix,
    loadTool,
    profile,
    scenarios,
    skipWebhooks: skipWebhooks || scenarios !== undefined,
    webhooksOnly,
    lifecycleAuditRows: lifecycle ? (auditRows ?? 10_000_000) : undefined,
    feedOnly,
    tracingOnly,
    databaseUrl: environment.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    natsUrl: environment.NATS_URL ?? "nats://127.0.0.1:4222",
    logLevel: environment.BENCH_LOG_LEVEL ?? "warn",
  };
}
