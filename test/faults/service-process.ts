import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { grpcHealthServing, httpAnswers } from "@subdata/local";

/**
 * One service of the stack as a real child process (`node --import tsx <entry>`), restartable with
 * the same environment and port, killable with any signal, pausable with SIGSTOP.
 */
export interface ServiceProcess {
  name: string;
  readonly pid: number | undefined;
  start(): Promise<void>;
  /** Sends `signal` and waits for the exit (SIGKILL: a crash, nothing runs on the way out). */
  kill(signal: NodeJS.Signals): Promise<void>;
  pause(): void;
  resume(): void;
  /** The last lines it wrote (for a failure message). */
  recentLines(): string[];
  /** Calls `listener` with every line written from now on (across restarts); returns the unsubscribe. */
  onLine(listener: (line: string) => void): () => void;
}

export interface ServiceSpec {
  name: string;
  entry: string;
  env: Record<string, string>;
  readiness: { kind: "grpc"; url: string; token: string } | { kind: "http"; url: string };
}

export function createServiceProcess(spec: ServiceSpec, repoRoot: string): ServiceProcess {
  let child: ChildProcess | undefined;
  const lines: string[] = [];
  const listeners = new Set<(line: string) => void>();
  const ready = () => (spec.readiness.kind === "grpc" ? grpcHealthServing(spec.readiness.url, spec.readiness.token) : httpAnswers(spec.readiness.url));
  const service: ServiceProcess = {
    name: spec.name,
    get pid() {
      return child?.pid;
    },
    async start() {
      const started = spawn(process.execPath, ["--import", "tsx", spec.entry], {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: "", ...spec.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = started;
      // A service that dies on its own is a finding: say so with its last words.
      started.once("exit", (code, signal) => {
        if (child === started) console.error(`[faults] ${spec.name} exited unexpectedly (code ${code}, signal ${signal}):\n${lines.slice(-15).join("\n")}`);
      });
      for (const stream of [started.stdout, started.stderr]) {
        createInterface({ input: stream }).on("line", (line) => {
          lines.push(line);
          if (lines.length > 40) lines.shift();
          for (const listener of listeners) listener(line);
        });
      }
      const deadline = Date.now() + 60_000;
      while (!(await ready().catch(() => false))) {
        if (started.exitCode !== null || Date.now() > deadline) {
          throw new Error(`${spec.name} did not become ready:\n${lines.join("\n")}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    },
    async kill(signal) {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      child = undefined;
      running.kill("SIGCONT"); // a paused process cannot act on SIGTERM
      running.kill(signal);
      // A clean stop gets 15 s; then it is a crash.
      const timer = setTimeout(() => running.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    },
    pause() {
      child?.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    recentLines: () => [...lines],
    onLine(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return service;
}
