import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One timed run of the load generator against one URL. */
export interface LoadResult {
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with a status outside 2xx/3xx. */
  non2xx: number;
  /** Connect/read/write errors and timeouts. */
  errors: number;
}

export interface LoadTarget {
  url: string;
  headers: Record<string, string>;
}

/**
 * Paced load: each connection pauses before every request (exponentially distributed pauses with
 * this mean, so the connections do not fall into step), instead of sending the next request the
 * moment a response ends. Offered load ≈ connections ÷ (mean pause + latency).
 */
export interface Pacing {
  meanPauseMs: number;
}

export interface LoadGenerator {
  name: "wrk" | "autocannon";
  /** How it shares the machine, for the report. */
  describe: string;
  /** Without `pacing`, a closed loop: every connection always has a request outstanding. */
  run(target: LoadTarget, connections: number, seconds: number, pacing?: Pacing): Promise<LoadResult>;
  /** How this generator carries out `pacing`, for the report. */
  describePacing(pacing: Pacing, connections: number): string;
}

/** The mean pause per connection that offers `requestsPerSecond` over `connections` (latency aside). */
export function pauseForRate(connections: number, requestsPerSecond: number): Pacing {
  if (!(requestsPerSecond > 0)) throw new Error(`a paced run needs a positive rate, got ${requestsPerSecond}`);
  return { meanPauseMs: (connections / requestsPerSecond) * 1000 };
}

/**
 * wrk's Lua hook for pacing: wrk calls delay() before each request of a connection (the first too)
 * and waits that many milliseconds. Exponential pauses (inverse transform of a uniform draw).
 */
export function wrkPacingScript(pacing: Pacing): string {
  if (!(pacing.meanPauseMs > 0)) throw new Error(`mean pause must be positive, got ${pacing.meanPauseMs}`);
  return [
    `local mean_ms = ${pacing.meanPauseMs.toFixed(3)}`,
    "math.randomseed(os.time())",
    "function delay()",
    "  return math.floor(-mean_ms * math.log(1 - math.random()))",
    "end",
    "",
  ].join("\n");
}

function hasWrk(): boolean {
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" });
    return true;
  } catch (error) {
    // wrk --version prints its usage and exits 1; only a missing binary is ENOENT.
    return (error as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/** wrk prints durations as 812.00us, 1.20ms, 2.01s. */
function durationMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === "us" ? value / 1000 : match[2] === "ms" ? value : match[2] === "s" ? value * 1000 : value * 60_000;
}

export function parseWrkOutput(output: string): LoadResult {
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? Number.NaN);
  const requestsMatch = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(output);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  return {
    requests: Number(requestsMatch?.[1] ?? 0),
    seconds: requestsMatch ? durationMs(`${requestsMatch[2]}${requestsMatch[3]}`) / 1000 : 0,
    requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
    p50Ms: durationMs(/^\s+50%\s+(\S+)/m.exec(output)?.[1] ?? ""),
    p99Ms: durationMs(/^\s+99%\s+(\S+)/m.exec(output)?.[1] ?? ""),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    errors: socket ? socket.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0,
  };
}

function wrkGenerator(): LoadGenerator {
  return {
    name: "wrk",
    describe: "wrk, 1 thread, on the same 2 cores as every server (no pinning)",
    describePacing: (pacing) =>
      `each pausing ${pacing.meanPauseMs.toFixed(0)} ms on average (exponentially distributed, wrk's delay() hook) before every request`,
    run(target, connections, seconds, pacing) {
      const args = ["-t1", `-c${connections}`, `-d${Math.max(1, Math.round(seconds))}s`, "--timeout", "10s", "--latency"];
      for (const [name, value] of Object.entries(target.headers)) args.push("-H", `${name}: ${value}`);
      const scriptDir = pacing ? mkdtempSync(join(tmpdir(), "subdata-bench-wrk-")) : undefined;
      if (scriptDir && pacing) {
        writeFileSync(join(scriptDir, "pacing.lua"), wrkPacingScript(pacing));
        args.push("-s", join(scriptDir, "pacing.lua"));
      }
      args.push(target.url);
      return new Promise<LoadResult>((resolve, reject) => {
        const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
        let output = "";
        child.stdout.on("data", (chunk) => (output += chunk));
        child.stderr.on("data", (chunk) => (output += chunk));
        child.once("error", reject);
        child.once("exit", (code) => {
          if (code !== 0) return reject(new Error(`wrk exited ${code}: ${output}`));
          const result = parseWrkOutput(output);
          if (!Number.isFinite(result.requestsPerSecond)) return reject(new Error(`could not read wrk's output:\n${output}`));
          resolve(result);
        });
      }).finally(() => {
        if (scriptDir) rmSync(scriptDir, { recursive: true, force: true });
      });
    },
  };
}

async function autocannonGenerator(): Promise<LoadGenerator> {
  const { default: autocannon } = (await import("autocannon")) as { default: (options: object) => Promise<AutocannonResult> };
  return {
    name: "autocannon",
    describe: "autocannon, inside the bench process, on the same 2 cores as every server (no pinning)",
    describePacing: (pacing, connections) =>
      `capped at ${pacedRate(pacing, connections)} req/s in all (autocannon sends each connection's share of a second at once, then waits: ` +
      "burstier than wrk's exponential pauses, so not comparable with a wrk run)",
    async run(target, connections, seconds, pacing) {
      // autocannon caps the overall rate (no random pauses per connection): the closest it offers. It would
      // also add samples for requests it "should" have sent (coordinated-omission correction), which are
      // not latencies any request had.
      const paced = pacing ? { overallRate: pacedRate(pacing, connections), ignoreCoordinatedOmission: true } : {};
      const result = await autocannon({ url: target.url, headers: target.headers, connections, duration: Math.max(1, seconds), timeout: 10, ...paced });
      return {
        requests: result.requests.total,
        seconds: result.duration,
        requestsPerSecond: result.requests.total / result.duration,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors + result.timeouts,
      };
    },
  };
}

/** The overall rate autocannon is capped at for a pacing. */
function pacedRate(pacing: Pacing, connections: number): number {
  return Math.max(1, Math.round((connections * 1000) / pacing.meanPauseMs));
}

interface AutocannonResult {
  requests: { total: number };
  duration: number;
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/**
 * wrk when installed (a C program: far lighter on shared cores than a Node generator). When it is
 * missing and `mayInstall`, running as root, it is installed from Debian's packages (saying so);
 * otherwise autocannon.
 */
export async function chooseLoadGenerator(
  preference: "wrk" | "autocannon" | undefined,
  mayInstall: boolean,
  say: (line: string) => void,
): Promise<LoadGenerator> {
  if (preference === "autocannon") return autocannonGenerator();
  if (hasWrk()) return wrkGenerator();
  if (mayInstall && process.getuid?.() === 0) {
    say("wrk is not installed: installing the Debian package (apt-get install -y wrk)");
    try {
      execFileSync("apt-get", ["install", "-y", "-q", "wrk"], {
        stdio: "ignore",
        env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
        timeout: 180_000,
      });
    } catch {
      try {
        execFileSync("apt-get", ["update", "-q"], { stdio: "ignore", timeout: 180_000 });
        execFileSync("apt-get", ["install", "-y", "-q", "wrk"], {
          stdio: "ignore",
          env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
          timeout: 180_000,
        });
      } catch (error) {
        say(`could not install wrk (${(error as Error).message.split("\n")[0]}); using autocannon`);
      }
    }
    if (hasWrk()) return wrkGenerator();
  }
  if (preference === "wrk") throw new Error("--tool wrk, but wrk is not installed (apt-get install wrk)");
  say("wrk is not installed: using autocannon (heavier: it shares the bench process)");
  return autocannonGenerator();
}
