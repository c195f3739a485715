import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { ServiceName } from "@subdata/db";
import {
  BENCH_PORT_BLOCK,
  buildBundles,
  buildProcessTable,
  bundleNameFor,
  bundleNodeArgs,
  childEnvironment,
  createPortPicker,
  type DevSecrets,
  formatLogLine,
  grpcHealthServing,
  httpAnswers,
  type ManagedProcess,
  prefixLines,
  type ProcessSpec,
  spawnManaged,
  stackUrls,
  waitFor,
} from "@subdata/local";

/**
 * The stack as production runs it — each service its own `node <SERVICE_NODE_FLAGS> <BUNDLE_NODE_FLAGS>
 * dist/bin/<name>.mjs` process (the bundles the image runs, built at the start of each run), with its
 * role's DATABASE_URL and environment from deploy/local's process table — plus the baseline and floor
 * servers, bundled the same way, so CPU and RSS can be read per process. Differences from production, all for
 * measuring: free ports, secrets invented per run, bench-only JetStream names (other work shares this
 * NATS), a per-key rate limit high enough not to throttle the load generator, and a quieter log level.
 */

/** The baseline and floor servers are bundled beside the production entries, for the bench only. */
const BENCH_ENTRIES: Readonly<Record<string, string>> = { "bench-baseline": "bench/src/baseline-main.ts", "bench-floor": "bench/src/floor-main.ts" };

export interface BenchSecrets {
  /** The app's token: the bench creates keys and endpoints as the admin tools do. */
  appToken: string;
  /** The gateway's token: the audit bench records reads as the gateway does. */
  gatewayToken: string;
  pageTokenSecret: string;
  /** The one key of both the baseline and the floor. */
  baselineKey: string;
  floorCursorSecret: string;
  dev: DevSecrets;
}

export function inventSecrets(): BenchSecrets {
  const hex = () => randomBytes(18).toString("hex");
  const dev: DevSecrets = {
    SUBDATA_GATEWAY_TOKEN: randomBytes(32).toString("base64url"),
    SUBDATA_CONSOLE_TOKEN: randomBytes(32).toString("base64url"),
    SUBDATA_APP_TOKEN: randomBytes(32).toString("base64url"),
    SUBDATA_CLI_TOKEN: randomBytes(32).toString("base64url"),
    SUBDATA_PAGE_TOKEN_SECRET: randomBytes(32).toString("base64url"),
    SUBDATA_WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
    SUBDATA_POSTGRES_PASSWORD: hex(),
    SUBDATA_QUERY_DB_PASSWORD: hex(),
    SUBDATA_AUTH_DB_PASSWORD: hex(),
    SUBDATA_WEBHOOK_DB_PASSWORD: hex(),
    SUBDATA_MAINTAIN_DB_PASSWORD: hex(),
    SUBDATA_CONSOLE_DB_PASSWORD: hex(),
    // The bench uses the machine's NATS (no authentication there): the logins are sent and ignored.
    SUBDATA_NATS_RELAY_PASSWORD: randomBytes(32).toString("base64url"),
    SUBDATA_NATS_WEBHOOK_PASSWORD: randomBytes(32).toString("base64url"),
    SUBDATA_NATS_AUTH_PASSWORD: randomBytes(32).toString("base64url"),
    SUBDATA_NATS_GATEWAY_PASSWORD: randomBytes(32).toString("base64url"),
  };
  return {
    appToken: dev.SUBDATA_APP_TOKEN,
    gatewayToken: dev.SUBDATA_GATEWAY_TOKEN,
    pageTokenSecret: dev.SUBDATA_PAGE_TOKEN_SECRET,
    baselineKey: `bench_${randomBytes(24).toString("hex")}`,
    floorCursorSecret: randomBytes(32).toString("base64url"),
    dev,
  };
}

/**
 * JetStream names of one bench run, apart from the dev stack's, the tests' and any other run's: two
 * runs sharing a consumer would take each other's events. The stream is deleted when the stack stops.
 */
function benchStreamNames(runId: string) {
  const token = runId.toLowerCase().replace(/[^a-z0-9]/g, "");
  return { stream: `SUBDATA_BENCH_${token.toUpperCase()}`, subjectPrefix: `subdata.bench.${token}.events`, consumer: `bench-${token}-deliveries` };
}

/** Deletes a run's stream (and so its consumer); a missing stream is fine. */
async function deleteStream(natsUrl: string, stream: string): Promise<void> {
  const url = new URL(natsUrl);
  const nc = await connect({ servers: `${url.hostname}:${url.port || "4222"}`, timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    await jsm.streams.delete(stream).catch(() => false);
  } finally {
    await nc.close();
  }
}

export interface StackOptions {
  repoRoot: string;
  roleUrls: Record<ServiceName, string>;
  natsUrl: string;
  secrets: BenchSecrets;
  logLevel: string;
  /** The merchant the baseline's and the floor's fixed key belongs to. */
  baselineMerchantId: string;
  /** Which processes to start (floor, baseline, query, auth, webhook, relay, gateway). */
  only?: readonly string[];
  /** More environment for every service process (the tracing bench's OTEL_* variables). */
  env?: Readonly<Record<string, string>>;
  /** Processes started with --cpu-prof, each writing into dir/<name>/ (frames name the bundle; its .map leads back to the sources). */
  profile?: { names: readonly string[]; dir: string };
  say(line: string): void;
}

export interface RunningProcess {
  name: string;
  pid: number;
  process: ManagedProcess;
}

export interface Stack {
  processes: RunningProcess[];
  gatewayUrl: string;
  /** The gateway's Prometheus endpoint (its own port, as in production). */
  gatewayMetricsUrl: string;
  baselineUrl: string;
  floorUrl: string;
  authUrl: string;
  webhookUrl: string;
  stop(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  // Rebuilt on every run (about a second), so the bench always measures the working tree.
  const started = performance.now();
  await buildBundles({ repoRoot: options.repoRoot, extraEntries: BENCH_ENTRIES });
  options.say(`bundled the processes into dist/bin in ${Math.round(performance.now() - started)} ms`);
  const portPicker = createPortPicker(BENCH_PORT_BLOCK);
  const freePort = () => portPicker.next();
  const ports = {
    gateway: await freePort(),
    query: await freePort(),
    auth: await freePort(),
    webhook: await freePort(),
    relayHealth: await freePort(),
    console: 0,
    consoleWeb: 0,
  };
  const baselinePort = await freePort();
  const floorPort = await freePort();
  const streamNames = benchStreamNames(randomBytes(6).toString("hex"));
  const config = {
    databaseUrl: undefined,
    natsUrl: options.natsUrl,
    dataDir: join(options.repoRoot, ".subdata"),
    embeddedPostgresPort: 0,
    ports,
    // Free ports: a bench stack must not clash with a dev stack or another run. The gateway's is known,
    // because the HTTP bench reads its metrics (gateway-steps.ts).
    metricsPorts: { gateway: await freePort(), query: 0, auth: 0, webhook: 0, maintain: 0, console: 0 },
    logLevel: options.logLevel,
    natsPermissions: { stream: streamNames.stream, subjectPrefix: streamNames.subjectPrefix, consumer: streamNames.consumer },
    runFrom: { kind: "bundles" as const, dir: join(options.repoRoot, "dist") },
    repoRoot: options.repoRoot,
  };
  const extra: Record<string, string> = {
    SUBDATA_EVENTS_STREAM: streamNames.stream,
    SUBDATA_EVENTS_SUBJECT_PREFIX: streamNames.subjectPrefix,
    SUBDATA_WEBHOOK_CONSUMER: streamNames.consumer,
    // The limiter still runs on every request; only its quota is out of the load generator's way.
    SUBDATA_RATE_LIMIT_QUOTA: "100000000",
    ...options.env,
  };
  // The maintenance task is left out: its runs (partitions, purges, table figures) would land inside the
  // measurements; the console serves people, not the measured paths.
  const table: ProcessSpec[] = buildProcessTable({ config, secrets: options.secrets.dev, roleUrls: options.roleUrls, natsUrl: options.natsUrl })
    .filter((spec) => spec.name !== "maintain" && spec.name !== "console")
    .map((spec) => ({ ...spec, env: { ...spec.env, ...extra } }));
  table.unshift({
    name: "baseline",
    entry: "bench/src/baseline-main.ts",
    port: baselinePort,
    readiness: { kind: "http", path: "/healthz" },
    needsNats: false,
    env: {
      HOST: "127.0.0.1",
      PORT: String(baselinePort),
      // The query service's read-only role: the floor reads exactly as the query service does.
      DATABASE_URL: options.roleUrls.query,
      SUBDATA_PAGE_TOKEN_SECRET: options.secrets.pageTokenSecret,
      BENCH_BASELINE_KEY: options.secrets.baselineKey,
      BENCH_BASELINE_MERCHANT: options.baselineMerchantId,
    },
  });
  table.unshift({
    name: "floor",
    entry: "bench/src/floor-main.ts",
    port: floorPort,
    readiness: { kind: "http", path: "/healthz" },
    needsNats: false,
    env: {
      HOST: "127.0.0.1",
      PORT: String(floorPort),
      // The query service's read-only role: the floor may read what the query service reads, nothing else.
      DATABASE_URL: options.roleUrls.query,
      BENCH_FLOOR_CURSOR_SECRET: options.secrets.floorCursorSecret,
      BENCH_FLOOR_KEY: options.secrets.baselineKey,
      BENCH_FLOOR_MERCHANT: options.baselineMerchantId,
    },
  });
  const specs = options.only ? table.filter((spec) => options.only?.includes(spec.name)) : table;
  if (options.profile) mkdirSync(options.profile.dir, { recursive: true });

  const running: RunningProcess[] = [];
  const recent = new Map<string, string[]>();
  let stopping = false;
  const stop = async () => {
    stopping = true;
    // The gateway first (stops taking requests), then the rest; bounded, then killed.
    const order = [...running].sort((a, b) => Number(b.name === "gateway") - Number(a.name === "gateway"));
    for (const entry of order) await entry.process.stop(15_000);
    await deleteStream(options.natsUrl, streamNames.stream).catch((error: Error) =>
      options.say(`could not delete stream ${streamNames.stream}: ${error.message}`),
    );
  };
  for (const spec of specs) {
    const profiled = options.profile?.names.includes(spec.name);
    // Production's node flags and bundles for every process, the baseline too, so RSS and CPU compare like with like.
    const args = [
      ...(profiled ? ["--cpu-prof", "--cpu-prof-dir", join(options.profile!.dir, spec.name)] : []),
      ...bundleNodeArgs(bundleNameFor(spec.entry, BENCH_ENTRIES)),
    ];
    const lines: string[] = [];
    recent.set(spec.name, lines);
    const child = spawnManaged({
      name: spec.name,
      command: process.execPath,
      args,
      cwd: options.repoRoot,
      env: childEnvironment(process.env, spec),
      onLine: (line) => {
        const text = prefixLines(spec.name, formatLogLine(line));
        lines.push(text);
        if (lines.length > 40) lines.shift();
        options.say(text);
      },
    });
    running.push({ name: spec.name, pid: child.pid, process: child });
    void child.exited.then((exit) => {
      if (!stopping && !child.stopRequested) options.say(`${spec.name} exited unexpectedly (${exit.signal ?? `code ${exit.code}`})`);
    });
  }

  const ready = await Promise.all(
    specs.map(async (spec) => {
      const child = running.find((entry) => entry.name === spec.name)!.process;
      const base = `http://127.0.0.1:${spec.port}`;
      const check =
        spec.readiness.kind === "grpc-health"
          ? () => grpcHealthServing(base, options.secrets.appToken)
          : spec.readiness.kind === "http"
            ? () => httpAnswers(`${base}${(spec.readiness as { path: string }).path}`)
            : async () => true;
      return { name: spec.name, ready: await waitFor(check, { timeoutMs: 90_000, gaveUp: () => !child.running }) };
    }),
  );
  const notReady = ready.filter((entry) => !entry.ready).map((entry) => entry.name);
  if (notReady.length) {
    await stop();
    throw new Error(`not ready: ${notReady.join(", ")}`);
  }
  const urls = stackUrls(config);
  return {
    processes: running,
    gatewayUrl: urls.gatewayUrl,
    gatewayMetricsUrl: `http://127.0.0.1:${config.metricsPorts.gateway}/metrics`,
    baselineUrl: `http://127.0.0.1:${baselinePort}`,
    floorUrl: `http://127.0.0.1:${floorPort}`,
    authUrl: urls.authUrl,
    webhookUrl: urls.webhookUrl,
    stop,
  };
}
