import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * A subdata process started as production starts it (`node --import tsx <main.ts>` with env), its
 * JSON log lines collected, so tests can send it SIGTERM and check how it stops.
 */
export interface RunningProcess {
  name: string;
  child: ChildProcess;
  /** Every stdout line, parsed when it is JSON. */
  lines: Array<Record<string, unknown>>;
  /** Raw stdout + stderr text, for leak checks. */
  output(): string;
  /** Resolves with the first log line matching, or fails after timeoutMs. */
  waitForLine(match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): void;
}

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

export function startProcess(name: string, entry: string, env: Record<string, string>): RunningProcess {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: repoRoot,
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", METRICS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Array<Record<string, unknown>> = [];
  let raw = "";
  let partial = "";
  const waiters = new Set<() => void>();
  child.stdout!.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    raw += text;
    partial += text;
    const complete = partial.split("\n");
    partial = complete.pop() ?? "";
    for (const line of complete) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: line });
      }
    }
    for (const wake of waiters) wake();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    raw += chunk.toString("utf8");
    if (process.env.TEST_LOG_LEVEL) process.stderr.write(`[${name}] ${chunk.toString("utf8")}`);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      for (const wake of waiters) wake();
      resolve({ code, signal });
    });
  });
  return {
    name,
    child,
    lines,
    output: () => raw,
    exited,
    waitForLine(match, what, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found) return done(() => resolve(found));
          if (child.exitCode !== null || child.signalCode !== null) {
            return done(() => reject(new Error(`${name} exited before ${what}:\n${raw.slice(-3000)}`)));
          }
        };
        const timer = setTimeout(() => done(() => reject(new Error(`timed out waiting for ${name}: ${what}\n${raw.slice(-3000)}`))), timeoutMs);
        const done = (finish: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          finish();
        };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

/** The ports a service logged in its "… listening" line (PORT=0 and METRICS_PORT=0 pick free ones). */
export async function listeningPorts(proc: RunningProcess): Promise<{ port: number; metricsPort: number }> {
  const line = await proc.waitForLine((l) => typeof l.msg === "string" && l.msg.endsWith("listening") && "metricsPort" in l, "listening");
  const port = typeof line.port === "number" ? line.port : Number(new URL(String(line.address)).port);
  return { port, metricsPort: Number(line.metricsPort) };
}

/** GET /metrics and return the text. */
export async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}

/** The value of one sample, matched by name and a subset of its labels; undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const match = /^([^{ ]+)(?:\{(.*)\})? (.+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) total = (total ?? 0) + Number(match[3]);
  }
  return total;
}
