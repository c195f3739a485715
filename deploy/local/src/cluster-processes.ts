import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";

/** Who, if anyone, still works in a cluster's data directory, judged from its lock file and /proc. */
export type ClusterProcesses =
  /** Nothing runs there (a lock file naming a dead pid is left to Postgres, which clears it itself). */
  | { kind: "idle" }
  /** The postmaster that the lock file names serves this cluster: a launcher was killed and left it. */
  | { kind: "postmaster"; pid: number }
  /** The lock file names a live process that works elsewhere, and nothing runs in the cluster: a stale lock. */
  | { kind: "stale-lock"; pid: number | undefined; lockFile: string }
  /** Server processes still run in the cluster without the postmaster that the lock file names. */
  | { kind: "orphans"; pids: number[] }
  /** No /proc to look in: Postgres decides at start (and says what it found). */
  | { kind: "unknown" };

function lockFilePid(lockFile: string): number | undefined | "absent" {
  let text: string;
  try {
    text = readFileSync(lockFile, "utf8");
  } catch {
    return "absent";
  }
  const pid = Number(text.split("\n")[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it lives, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Every Postgres process (postmaster and backends) makes the data directory its working directory,
 * so the processes whose /proc/<pid>/cwd is the cluster are exactly the ones still using it. Processes
 * of other users are unreadable when we are not root; those cannot be running our cluster.
 */
function processesWorkingIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === dir) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

export function clusterProcesses(clusterDir: string): ClusterProcesses {
  const lockFile = join(clusterDir, "postmaster.pid");
  const pid = lockFilePid(lockFile);
  if (pid === "absent") return { kind: "idle" };
  if (!existsSync("/proc/self/cwd")) return { kind: "unknown" };
  const working = processesWorkingIn(realpathSync(clusterDir));
  if (pid !== undefined && working.includes(pid)) return { kind: "postmaster", pid };
  if (working.length) return { kind: "orphans", pids: working };
  // A lock naming a live process elsewhere (a pid reused after a reboot or in a restarted container),
  // or one too damaged to name any: Postgres would refuse to start, yet nothing uses the cluster.
  if (pid === undefined || alive(pid)) return { kind: "stale-lock", pid, lockFile };
  return { kind: "idle" };
}
