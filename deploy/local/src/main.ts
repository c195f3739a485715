import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "@subdata/runtime";
import { loadLocalConfig } from "./config.ts";
import { merchantExists, prepareDatabase } from "./database.ts";
import { devNatsUsers, loadDevSecrets, saveDevEnv } from "./dev-secrets.ts";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";
import { createDemoKey, printDemoConsoleLink, seedDemoMerchant } from "./first-run.ts";
import { prefixLines } from "./log-line.ts";
import type { ManagedProcess } from "./managed-process.ts";
import { ensureNats, natsHelp } from "./nats.ts";
import { buildProcessTable, stackUrls } from "./process-table.ts";
import { startServices, stopServices, waitUntilReady, type RunningService } from "./processes.ts";
import { renderSummary } from "./summary.ts";

// Wiring only: data dir → secrets → Postgres → NATS → migrations → seed → services → demo key → summary.
// Ctrl-C / SIGTERM stops everything in reverse order and exits 0.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const print = (line: string) => process.stdout.write(`${line}\n`);
const say = (line: string) => print(prefixLines("local", line));

/** What to stop on the way out, in reverse order of start. */
const cleanups: Array<{ name: string; stop: () => Promise<void> }> = [];
/** Every process we spawned, for the last-resort kill if the launcher itself dies. */
const spawned = new Set<ManagedProcess>();
let shuttingDown = false;

async function shutdown(exitCode: number): Promise<never> {
  if (shuttingDown) return new Promise<never>(() => {});
  shuttingDown = true;
  say("stopping…");
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup.stop();
    } catch (error) {
      say(`stopping ${cleanup.name} failed: ${(error as Error).message}`);
      exitCode = 1;
    }
  }
  say("stopped");
  process.exit(exitCode);
}

/** Registers a cleanup; when shutdown already began (a signal during start-up), runs it at once. */
function onStop(name: string, stop: () => Promise<void>): void {
  if (shuttingDown) void stop();
  else cleanups.push({ name, stop });
}

function track(child: ManagedProcess | undefined): void {
  if (child) spawned.add(child);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (shuttingDown) {
      say(`second ${signal}: killing everything now`);
      for (const child of spawned) child.signal("SIGKILL");
      process.exit(1);
    }
    void shutdown(0);
  });
}
// Last resort if the launcher crashes: our children run in their own process groups.
process.on("exit", () => {
  for (const child of spawned) if (child.running) child.signal(child.name === "postgres" ? "SIGINT" : "SIGTERM");
});

async function main(): Promise<void> {
  const config = loadLocalConfig(process.env, repoRoot);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o755 });
  const devEnvPath = join(config.dataDir, "dev.env");
  const { secrets, created } = loadDevSecrets(devEnvPath);
  if (created.length) {
    say(`generated local secrets into ${devEnvPath}`);
    // Saved before anything uses them: initdb bakes the Postgres password into the cluster.
    saveDevEnv(devEnvPath, secrets, {});
  }

  let adminUrl: string;
  let embedded: { clusterDir: string } | undefined;
  if (config.databaseUrl !== undefined) {
    adminUrl = config.databaseUrl;
    say("using DATABASE_URL");
  } else {
    say(`starting embedded Postgres on 127.0.0.1:${config.embeddedPostgresPort}`);
    const postgres = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPostgresPort,
      password: secrets.SUBDATA_POSTGRES_PASSWORD,
      database: "subdata",
      say,
      onLog: (line) => print(prefixLines("postgres", line)),
    });
    track(postgres.process);
    onStop("postgres", postgres.stop);
    adminUrl = postgres.adminUrl;
    embedded = { clusterDir: postgres.clusterDir };
  }
  if (shuttingDown) return;

  const nats = await ensureNats({
    url: config.natsUrl,
    dataDir: config.dataDir,
    users: devNatsUsers(secrets),
    permissions: config.natsPermissions,
    onLog: (line) => print(prefixLines("nats", line)),
  });
  if (nats.kind === "started") {
    say(`started nats-server with JetStream on ${nats.url}`);
    track(nats.process);
    onStop("nats-server", nats.stop);
  } else if (nats.kind === "missing" || nats.kind === "no-jetstream") {
    say(nats.reason);
    for (const line of natsHelp(nats)) say(line);
  }
  if (shuttingDown) return;

  const { applied, roleUrls } = await prepareDatabase(adminUrl, secrets, say);
  say(applied.length ? `applied ${applied.length} migration(s)` : "database schema is up to date");
  const urls = stackUrls(config);
  const endpoints = {
    DATABASE_URL: adminUrl,
    NATS_URL: config.natsUrl,
    SUBDATA_QUERY_URL: urls.queryUrl,
    SUBDATA_AUTH_URL: urls.authUrl,
    SUBDATA_WEBHOOK_URL: urls.webhookUrl,
    SUBDATA_GATEWAY_URL: urls.gatewayUrl,
    SUBDATA_CONSOLE_URL: urls.consoleUrl,
  };
  saveDevEnv(devEnvPath, secrets, endpoints);
  if (shuttingDown) return;

  await seedDemoMerchant({
    repoRoot,
    dataDir: config.dataDir,
    adminUrl,
    env: { ...process.env, ...secrets, ...endpoints },
    print,
    say,
    track: (child) => {
      track(child);
      if (child) onStop("seed", async () => void (await child.stop(10_000)));
    },
  });
  if (shuttingDown) return;

  if (config.runFrom.kind === "bundles") say(`running the services' bundles from ${config.runFrom.dir}/bin (SUBDATA_RUN_FROM=bundles)`);
  let running: RunningService[] = [];
  const started = await startServices({
    specs: buildProcessTable({ config, secrets, roleUrls, natsUrl: config.natsUrl }),
    repoRoot,
    natsAvailable: nats.kind === "external" || nats.kind === "started",
    runFrom: config.runFrom,
    print,
    onUnexpectedExit(service, exit) {
      if (shuttingDown) return;
      const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
      say(`${service.spec.name} stopped unexpectedly (${how}); stopping the stack (see its output above)`);
      void shutdown(1);
    },
  });
  running = started.running;
  for (const service of running) track(service.process);
  onStop("services", () => stopServices(running, 20_000));
  for (const { spec, reason } of started.skipped) say(`${spec.name}: skipped, ${reason}`);

  await waitUntilReady(running, secrets.SUBDATA_APP_TOKEN, 90_000, () => shuttingDown);
  if (shuttingDown) return;

  if (running.some((service) => service.spec.name === "auth")) {
    await createDemoKey({
      dataDir: config.dataDir,
      adminUrl,
      authUrl: urls.authUrl,
      gatewayUrl: urls.gatewayUrl,
      serviceToken: secrets.SUBDATA_APP_TOKEN,
      print,
      say,
    });
  }
  if (running.some((service) => service.spec.name === "console") && (await merchantExists(adminUrl, "mer_demo"))) {
    await printDemoConsoleLink({ consoleUrl: urls.consoleUrl, serviceToken: secrets.SUBDATA_APP_TOKEN, print, say });
  }
  print("");
  for (const line of renderSummary({
    repoRoot,
    dataDir: config.dataDir,
    devEnvPath,
    databaseUrl: adminUrl,
    embeddedPostgres: embedded,
    nats,
    running,
    skipped: started.skipped,
  })) {
    print(line);
  }
}

main().catch((error: unknown) => {
  if (shuttingDown) return;
  say(error instanceof ConfigError ? error.message : `start-up failed: ${(error as Error).message}`);
  void shutdown(1);
});
