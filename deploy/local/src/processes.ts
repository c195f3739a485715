import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { bundleNameFor, bundleNodeArgs, bundlePathFor } from "./bundle.ts";
import { formatLogLine, prefixLines } from "./log-line.ts";
import { spawnManaged, type ManagedProcess, type ProcessExit } from "./managed-process.ts";
import { childEnvironment, type ProcessSpec } from "./process-table.ts";
import type { RunFrom } from "./config.ts";
import { serviceNodeArgs } from "./node-flags.ts";
import { grpcHealthServing, httpAnswers, waitFor } from "./readiness.ts";

export interface RunningService {
  spec: ProcessSpec;
  process: ManagedProcess;
}

export interface SkippedService {
  spec: ProcessSpec;
  reason: string;
}

export interface StartServicesOptions {
  specs: readonly ProcessSpec[];
  repoRoot: string;
  natsAvailable: boolean;
  runFrom: RunFrom;
  print(line: string): void;
  /** Called once per process that exits while the launcher did not ask it to. */
  onUnexpectedExit(service: RunningService, exit: ProcessExit): void;
}

/** Resolves false when something already listens on 127.0.0.1:port. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** Which process a free-port problem belongs to, for a message that names the variable to change. */
const portVariables: Record<string, string> = {
  query: "QUERY_PORT",
  auth: "AUTH_PORT",
  webhook: "WEBHOOK_PORT",
  relay: "RELAY_HEALTH_PORT",
  gateway: "GATEWAY_PORT",
  console: "CONSOLE_PORT",
};

/** `node`'s arguments for a process: its TypeScript entry through tsx, or its bundle as the image runs it. */
function nodeArgsFor(spec: ProcessSpec, runFrom: RunFrom): string[] {
  return runFrom.kind === "sources" ? serviceNodeArgs(spec.entry) : bundleNodeArgs(bundleNameFor(spec.entry), runFrom.dir);
}

/**
 * Spawns each process of the table as `node <SERVICE_NODE_FLAGS> --import tsx <entry>` (or its bundle), piping its output line by line
 * behind a `[name]` prefix. Entries whose file does not exist yet are skipped (the stack grows as
 * services land), as are the NATS-dependent ones when there is no NATS.
 */
export async function startServices(options: StartServicesOptions): Promise<{ running: RunningService[]; skipped: SkippedService[] }> {
  const running: RunningService[] = [];
  const skipped: SkippedService[] = [];
  const { runFrom } = options;
  if (runFrom.kind === "bundles") {
    const missing = options.specs.map((spec) => bundlePathFor(bundleNameFor(spec.entry), runFrom.dir)).filter((path) => !existsSync(path));
    if (missing.length)
      throw new Error(`SUBDATA_RUN_FROM=bundles, but ${missing.join(", ")} is missing: run npm run build (npm run start:bundled builds first)`);
  }
  for (const spec of options.specs) {
    if (!existsSync(join(options.repoRoot, spec.entry))) {
      skipped.push({ spec, reason: `not built yet (${spec.entry} does not exist)` });
      continue;
    }
    if (spec.needsNats && !options.natsAvailable) {
      skipped.push({ spec, reason: "needs NATS JetStream" });
      continue;
    }
    if (spec.port !== undefined && spec.port !== 0 && !(await portIsFree(spec.port))) {
      throw new Error(`port ${spec.port} for ${spec.name} is already in use; stop what holds it or set ${portVariables[spec.name] ?? "its port"}`);
    }
  }
  for (const spec of options.specs) {
    if (skipped.some((skip) => skip.spec === spec)) continue;
    const child = spawnManaged({
      name: spec.name,
      command: process.execPath,
      args: [...nodeArgsFor(spec, runFrom), ...(spec.args ?? [])],
      cwd: options.repoRoot,
      env: childEnvironment(process.env, spec),
      onLine: (line) => options.print(prefixLines(spec.name, formatLogLine(line))),
    });
    const service = { spec, process: child };
    running.push(service);
    // Any exit not asked for by stop() is a failure the operator must see; we never restart silently.
    void child.exited.then((exit) => {
      if (!child.stopRequested) options.onUnexpectedExit(service, exit);
    });
  }
  return { running, skipped };
}

/** Waits until every process with a readiness check passes it; throws naming the ones that did not. */
export async function waitUntilReady(running: readonly RunningService[], serviceToken: string, timeoutMs: number, gaveUp: () => boolean): Promise<void> {
  const results = await Promise.all(
    running.map(async ({ spec, process: child }) => {
      const readiness = spec.readiness;
      if (readiness.kind === "none" || spec.port === undefined) return { spec, ready: true };
      const baseUrl = `http://127.0.0.1:${spec.port}`;
      const check = readiness.kind === "grpc-health" ? () => grpcHealthServing(baseUrl, serviceToken) : () => httpAnswers(`${baseUrl}${readiness.path}`);
      const ready = await waitFor(check, { timeoutMs, gaveUp: () => gaveUp() || !child.running });
      return { spec, ready };
    }),
  );
  const notReady = results.filter((result) => !result.ready).map((result) => result.spec.name);
  if (notReady.length) throw new Error(`not ready: ${notReady.join(", ")}`);
}

/** The gateway first (stop taking requests), then the rest together; each bounded, then killed. */
export async function stopServices(running: readonly RunningService[], timeoutMs: number): Promise<void> {
  const edge = running.filter((service) => service.spec.name === "gateway");
  const inner = running.filter((service) => service.spec.name !== "gateway");
  await Promise.all(edge.map((service) => service.process.stop(timeoutMs)));
  await Promise.all(inner.map((service) => service.process.stop(timeoutMs)));
}
