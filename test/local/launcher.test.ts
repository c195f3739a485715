import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildBundles } from "@subdata/local";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { SHARED_CLUSTERS_DIR } from "../../deploy/local/src/cluster-location.ts";
import { writeDevEnvFile } from "../../deploy/local/src/dev-env-file.ts";
import { findNatsServer } from "../../deploy/local/src/nats.ts";
import { grpcHealthServing } from "../../deploy/local/src/readiness.ts";
import { satisfiesEngines } from "../../deploy/local/src/supported-node.ts";
import { startNatsWithoutJetStream, type PlainNats } from "./nats-without-jetstream.ts";
import { privateClone } from "./private-clone.ts";
import { freePort } from "../support/free-port.ts";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const rootManifest = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { engines: { node: string }; scripts: { start: string } };

/** Pids of live processes whose environment carries `marker` (our launcher's children do). */
function processesWithEnv(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(marker)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("npm start (deploy/local) against an existing Postgres and NATS", () => {
  const databaseName = `subdata_local_${inject("runId")}`;
  const serverUrl = new URL(inject("adminDatabaseUrl"));
  serverUrl.pathname = "/postgres";
  const databaseUrl = new URL(serverUrl);
  databaseUrl.pathname = `/${databaseName}`;
  let dataDir: string;
  let launcher: ChildProcess | undefined;
  let output = "";

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${databaseName}`);
    await admin.end();
    dataDir = mkdtempSync(join(tmpdir(), "subdata-local-"));
    // Service roles are cluster-wide: reuse the passwords the run already gave them, so setting
    // them again (as the launcher does) cannot break other test files on a password-checking server.
    const roles = inject("roleDatabaseUrls");
    writeDevEnvFile(
      join(dataDir, "dev.env"),
      {
        SUBDATA_QUERY_DB_PASSWORD: decodeURIComponent(new URL(roles.query).password),
        SUBDATA_AUTH_DB_PASSWORD: decodeURIComponent(new URL(roles.auth).password),
        SUBDATA_WEBHOOK_DB_PASSWORD: decodeURIComponent(new URL(roles.webhook).password),
        SUBDATA_CONSOLE_DB_PASSWORD: decodeURIComponent(new URL(roles.console).password),
      },
      [],
    );
  });

  afterAll(async () => {
    if (launcher && launcher.exitCode === null) launcher.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
    await admin.end();
  });

  /** Fresh ports for a run, and the environment that points the launcher at this file's database. */
  async function launcherEnvironment(extra: NodeJS.ProcessEnv = {}) {
    const ports = {
      QUERY_PORT: await freePort(),
      AUTH_PORT: await freePort(),
      WEBHOOK_PORT: await freePort(),
      RELAY_HEALTH_PORT: await freePort(),
      GATEWAY_PORT: await freePort(),
      CONSOLE_PORT: await freePort(),
      CONSOLE_WEB_PORT: await freePort(),
      CONSOLE_METRICS_PORT: "0",
      GATEWAY_METRICS_PORT: "0",
      QUERY_METRICS_PORT: "0",
      AUTH_METRICS_PORT: "0",
      WEBHOOK_METRICS_PORT: "0",
      MAINTAIN_METRICS_PORT: "0",
    };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl.toString(),
      NATS_URL: inject("natsUrl"),
      SUBDATA_DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
      ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
      ...extra,
    };
    return { ports, env };
  }

  // Waits up to 100 s for the ready line and 60 s for the exit, like its siblings' limits allow.
  // Through npm start's script: on a machine whose Node does not satisfy engines (CI runs this file on
  // the machine's Node 20 too) the script fetches the pinned build, and every service runs on it.
  it("npm start starts every built service on the supported Node, answers health checks, and stops them all on SIGTERM with exit 0", {
    timeout: 240_000,
  }, async () => {
    const { ports, env } = await launcherEnvironment();
    // The script as npm runs it (sh -c), without npm, which answers a SIGTERM by re-raising it once its child is done.
    const start = rootManifest.scripts.start;
    launcher = spawn("sh", ["-c", `exec ${start}`], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    launcher.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    launcher.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => launcher?.once("exit", (code) => resolve(code)));

    await until("the ready line", () => output.includes("subdata is ready") || launcher?.exitCode !== null, 100_000);
    expect(output, output).toContain("subdata is ready");

    const dev = readFileSync(join(dataDir, "dev.env"), "utf8");
    expect(dev).toContain(`SUBDATA_QUERY_URL=http://127.0.0.1:${ports.QUERY_PORT}`);
    const token = /^SUBDATA_APP_TOKEN=(.+)$/m.exec(dev)?.[1] ?? "";
    expect(token.length).toBeGreaterThanOrEqual(32);
    for (const caller of ["GATEWAY", "CONSOLE", "APP", "CLI"]) {
      const own = new RegExp(`^SUBDATA_${caller}_TOKEN=(.+)$`, "m").exec(dev)?.[1] ?? "";
      expect(own.length, caller).toBeGreaterThanOrEqual(32);
      expect(output).not.toContain(own);
    }

    // The launcher works at every stage of the project: a service not written yet is skipped.
    const marker = `SUBDATA_QUERY_URL=http://127.0.0.1:${ports.QUERY_PORT}`;
    if (existsSync(join(repoRoot, "services/query/src/main.ts"))) {
      expect(output).toContain(`http://127.0.0.1:${ports.QUERY_PORT}`);
      expect(await grpcHealthServing(`http://127.0.0.1:${ports.QUERY_PORT}`, token)).toBe(true);
      expect(processesWithEnv(marker).length).toBeGreaterThan(0);
      const engines = rootManifest.engines.node;
      // The services and the launcher's helpers that are Node (tsx's esbuild is not).
      const nodeExecutables = processesWithEnv(marker)
        .map((pid) => readlinkSync(`/proc/${pid}/exe`))
        .filter((exe) => basename(exe) === "node");
      expect(nodeExecutables.length).toBeGreaterThan(0);
      for (const exe of new Set(nodeExecutables)) {
        const runtime = execFileSync(exe, ["--version"], { encoding: "utf8" }).trim();
        expect(satisfiesEngines(runtime, engines), `${exe} is Node ${runtime}`).toBe(true);
      }
      if (!satisfiesEngines(process.versions.node, engines)) expect(output).toMatch(/\[runtime\] +this machine's Node .* running on Node /);
    } else {
      expect(output).toContain("query     skipped: not built yet");
    }

    launcher.kill("SIGTERM");
    const code = await Promise.race([exited, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 60_000))]);
    expect(code, output).toBe(0);
    await until("every child to be gone", () => processesWithEnv(marker).length === 0, 10_000);
  });
  it("with SUBDATA_RUN_FROM=bundles runs every process from its bundle, as the image does", { timeout: 180_000 }, async () => {
    // Built inside the repository, so the bundles load their third-party packages from its node_modules.
    const outDir = mkdtempSync(join(repoRoot, "node_modules", ".subdata-test-bundles-"));
    try {
      const { bundles } = await buildBundles({ repoRoot, outDir });
      const { ports, env } = await launcherEnvironment({ SUBDATA_RUN_FROM: "bundles", SUBDATA_BUNDLE_DIR: outDir });
      const run = runLauncher(repoRoot, env);
      await until("the ready line", () => run.output().includes("subdata is ready") || run.child.exitCode !== null, 100_000);
      expect(run.output(), run.output()).toContain("subdata is ready");

      // Every child inherits the launcher's environment; the launcher itself runs through tsx.
      const marker = `SUBDATA_BUNDLE_DIR=${outDir}`;
      const commandLines = processesWithEnv(marker)
        .filter((pid) => pid !== run.child.pid)
        .map((pid) => readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0"));
      const scripts = commandLines.map((args) => args.find((arg) => !arg.startsWith("-") && (arg.endsWith(".mjs") || arg.endsWith(".ts"))));
      // The services and the maintenance timer: each a bundle of this build, none through tsx, each
      // with the build's source-maps preload.
      for (const name of ["query", "auth", "webhook", "relay", "gateway", "console", "subdata"]) expect(scripts, name).toContain(bundles[name]);
      for (const args of commandLines) expect(args).toContain(`--import=${outDir}/bin/source-maps.mjs`);
      expect(commandLines.filter((args) => args.includes("tsx"))).toEqual([]);
      const dev = readFileSync(join(dataDir, "dev.env"), "utf8");
      const token = /^SUBDATA_APP_TOKEN=(.+)$/m.exec(dev)?.[1] ?? "";
      expect(await grpcHealthServing(`http://127.0.0.1:${ports.QUERY_PORT}`, token)).toBe(true);

      expect(await stopLauncher(run), run.output()).toBe(0);
      await until("every child to be gone", () => processesWithEnv(marker).length === 0, 10_000);
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });

  it("with SUBDATA_RUN_FROM=bundles and no build, names the missing bundle and says to build, exit 1", { timeout: 120_000 }, async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), "subdata-no-bundles-"));
    try {
      const { env } = await launcherEnvironment({ SUBDATA_RUN_FROM: "bundles", SUBDATA_BUNDLE_DIR: emptyDir });
      const run = runLauncher(repoRoot, env);
      expect(await run.exited, run.output()).toBe(1);
      expect(run.output()).toContain(`${emptyDir}/bin/gateway.mjs`);
      expect(run.output()).toContain("run npm run build");
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });

  it("refuses a SUBDATA_RUN_FROM it does not know, naming the variable", async () => {
    const { env } = await launcherEnvironment({ SUBDATA_RUN_FROM: "binaries" });
    const run = runLauncher(repoRoot, env);
    expect(await run.exited, run.output()).toBe(1);
    expect(run.output()).toMatch(/SUBDATA_RUN_FROM.*must be one of sources, bundles/);
  });
});

/** A launcher run: its output so far, its exit. */
function runLauncher(cwd: string, env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let output = "";
  const child = spawn(process.execPath, ["--import", "tsx", "deploy/local/src/main.ts"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function stopLauncher(run: ReturnType<typeof runLauncher>): Promise<number | "timeout" | null> {
  run.child.kill("SIGTERM");
  return Promise.race([run.exited, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 60_000))]);
}

describe("npm start from a clone in a private folder (0700, spaces in its path), with the embedded Postgres", () => {
  const clone = privateClone();
  const runs: Array<ReturnType<typeof runLauncher>> = [];
  let plainNats: PlainNats | undefined;

  afterAll(async () => {
    for (const run of runs) if (run.child.exitCode === null) await stopLauncher(run);
    await plainNats?.stop();
    clone.remove();
  });

  async function environment(natsUrl: string): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = { ...process.env, NATS_URL: natsUrl, LOG_LEVEL: "warn" };
    // Nothing of the test run's own set-up: the launcher's defaults, as on a newcomer's machine.
    delete env.DATABASE_URL;
    delete env.SUBDATA_DATA_DIR;
    for (const name of [
      "EMBEDDED_POSTGRES_PORT",
      "QUERY_PORT",
      "AUTH_PORT",
      "WEBHOOK_PORT",
      "RELAY_HEALTH_PORT",
      "GATEWAY_PORT",
      "CONSOLE_PORT",
      "CONSOLE_WEB_PORT",
    ])
      env[name] = String(await freePort());
    for (const name of [
      "GATEWAY_METRICS_PORT",
      "QUERY_METRICS_PORT",
      "AUTH_METRICS_PORT",
      "WEBHOOK_METRICS_PORT",
      "MAINTAIN_METRICS_PORT",
      "CONSOLE_METRICS_PORT",
    ])
      env[name] = "0";
    return env;
  }

  it("starts the whole stack, serves the demo data, and stops with exit 0", { timeout: 240_000 }, async () => {
    // A NATS_URL where nothing answers: the launcher runs its own nats-server -js when one is installed.
    const env = await environment(`nats://127.0.0.1:${await freePort()}`);
    const run = runLauncher(clone.root, env);
    runs.push(run);
    await until("the ready line", () => run.output().includes("subdata is ready") || run.child.exitCode !== null, 150_000);
    const output = run.output();
    expect(output, output).toContain("subdata is ready");
    expect(output).toContain("initialising the embedded Postgres cluster");
    if (process.getuid?.() === 0) {
      expect(output).toMatch(
        new RegExp(
          `postgres +postgres://postgres@127\\.0\\.0\\.1:${env.EMBEDDED_POSTGRES_PORT}/subdata +\\(embedded, data in ${SHARED_CLUSTERS_DIR}/my-clone-[0-9a-f]{8}/data, linked from \\.subdata/postgres\\)`,
        ),
      );
    } else {
      expect(output).toContain("(embedded, data in .subdata/postgres)");
    }
    if (findNatsServer()) expect(output).toContain(`started nats-server with JetStream on ${env.NATS_URL}`);

    const key = /Authorization: Bearer (\S+)"/.exec(output)?.[1];
    expect(key, output).toBeDefined();
    const response = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/api/v1/subscriptions?limit=2`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: unknown[] }).data).toHaveLength(2);

    // The one-time link to the demo merchant's API & integrations page opens it (sets the session cookie).
    const link = /(http:\/\/127\.0\.0\.1:\d+\/console\/open\?token=\S+)/.exec(output)?.[1];
    expect(link, output).toContain(`:${env.CONSOLE_WEB_PORT}/console/open?token=`);
    const opened = await fetch(link!, { redirect: "manual" });
    expect(opened.status).toBe(200);
    expect(opened.headers.get("set-cookie")).toMatch(/^subdata_console=[^;]+; Path=\/console; Max-Age=\d+; HttpOnly; SameSite=Strict$/);

    expect(await stopLauncher(run), run.output()).toBe(0);
  });

  it("on a second start finds the cluster and its data again; a NATS without JetStream is named, and the rest runs", { timeout: 240_000 }, async () => {
    plainNats = await startNatsWithoutJetStream();
    const natsUrl = plainNats.url;
    const env = await environment(natsUrl);
    const run = runLauncher(clone.root, env);
    runs.push(run);
    await until("the ready line", () => run.output().includes("subdata is ready") || run.child.exitCode !== null, 150_000);
    const output = run.output();
    expect(output, output).toContain("subdata is ready");
    expect(output).not.toContain("initialising the embedded Postgres cluster");
    expect(output).not.toContain("seed: first run");
    const databaseUrl = /^DATABASE_URL=(.+)$/m.exec(readFileSync(join(clone.root, ".subdata", "dev.env"), "utf8"))?.[1];
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const seeded = await client.query<{ count: string }>("SELECT count(*) FROM subscriptions WHERE merchant_id = 'mer_demo'");
    await client.end();
    expect(seeded.rows).toEqual([{ count: "2000" }]);
    expect(output).toContain(`NATS at ${natsUrl} (NATS_URL) answers, but without JetStream`);
    expect(output).toContain(`nats      ${natsUrl}  answers without JetStream: events and webhooks are off`);
    expect(output).toContain("webhook   skipped: needs NATS JetStream");
    expect(output).toContain("relay     skipped: needs NATS JetStream");
    expect(await stopLauncher(run), run.output()).toBe(0);
  });
});
