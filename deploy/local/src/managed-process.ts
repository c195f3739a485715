import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why it never ran (spawn failed: EACCES, ENOENT, …). */
  error?: NodeJS.ErrnoException;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly running: boolean;
  /** True once stop() was called: an exit after that was asked for. */
  readonly stopRequested: boolean;
  /** Resolves when the process has exited, whatever the reason. */
  readonly exited: Promise<ProcessExit>;
  /** Sends `signal` to the process group, waits up to `timeoutMs`, then SIGKILLs the group. */
  stop(timeoutMs: number): Promise<ProcessExit>;
  /** Synchronous last resort for process 'exit': signal the group without waiting. */
  signal(signal: NodeJS.Signals): void;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: readonly string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
  /** The signal that asks this program to shut down cleanly (postgres: SIGINT = fast shutdown). */
  stopSignal?: NodeJS.Signals;
  /** Each line the process writes to stdout or stderr. */
  onLine(line: string, stream: "stdout" | "stderr"): void;
}

/**
 * Spawns a program in its own process group (detached), so a terminal's Ctrl-C reaches only the
 * launcher, which then stops everything in order instead of every process at once.
 */
export function spawnManaged(options: SpawnOptions): ManagedProcess {
  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd,
    env: options.env,
    uid: options.uid,
    gid: options.gid,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let running = true;
  let stopRequested = false;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once("exit", (code, signal) => {
      running = false;
      resolve({ code, signal });
    });
    child.once("error", (error) => {
      running = false;
      resolve({ code: null, signal: null, error });
    });
  });
  for (const stream of ["stdout", "stderr"] as const) {
    createInterface({ input: child[stream] }).on("line", (line) => options.onLine(line, stream));
  }
  const signalGroup = (signal: NodeJS.Signals) => {
    if (!running || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  return {
    name: options.name,
    pid: child.pid ?? -1,
    get running() {
      return running;
    },
    get stopRequested() {
      return stopRequested;
    },
    exited,
    signal: signalGroup,
    async stop(timeoutMs) {
      stopRequested = true;
      signalGroup(options.stopSignal ?? "SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), timeoutMs);
      });
      const outcome = await Promise.race([exited, deadline]);
      clearTimeout(timer);
      if (outcome !== "timeout") return outcome;
      signalGroup("SIGKILL");
      return exited;
    },
  };
}
