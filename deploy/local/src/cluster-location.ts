import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  type Stats,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { clusterProcesses } from "./cluster-processes.ts";
import type { PostgresBinaries } from "./postgres-binaries.ts";
import type { OsUser } from "./unprivileged-user.ts";

/**
 * Where root's embedded clusters live. Postgres refuses to run as root, so it runs as the system user
 * `postgres`, which cannot reach a clone under a private folder (a 0700 home, a `mktemp -d`) — neither
 * its binaries in node_modules nor a cluster in `.subdata`. Each cluster gets a folder here with its
 * data and a hard-linked copy of the binaries; `<data dir>/postgres` is a symbolic link to the data.
 */
export const SHARED_CLUSTERS_DIR = "/var/lib/subdata/postgres";

export interface ClusterLocation {
  /** The cluster's data directory (PGDATA), as a real path. */
  clusterDir: string;
  /** The initdb and postgres to run. */
  binaries: PostgresBinaries;
}

/** Creates `dir` (and its parents) open for reading; an existing folder is left as its owner made it. */
function ensureReadableDir(dir: string): void {
  if (existsSync(dir)) return;
  ensureReadableDir(dirname(dir));
  mkdirSync(dir);
  chmodSync(dir, 0o755); // explicit: a umask of 077 would leave it closed to the postgres user
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/** A copy of `source` that everyone may read (and run, if its owner may), nobody but root may change. */
function copyReadable(source: string, target: string): void {
  const mode = statSync(source).mode;
  copyFileSync(source, target);
  chmodSync(target, mode & 0o100 ? 0o755 : 0o644);
}

/**
 * Mirrors `from` into `to`, symlinks as they are. Files are hard-linked where one file system holds
 * both and the file is readable by all (a link shares its mode); otherwise copied.
 */
function linkTree(from: string, to: string): void {
  mkdirSync(to);
  chmodSync(to, 0o755);
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) linkTree(source, target);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (!(statSync(source).mode & 0o004)) copyReadable(source, target);
    else {
      try {
        linkSync(source, target);
      } catch (error) {
        if (!["EXDEV", "EPERM", "EMLINK"].includes((error as NodeJS.ErrnoException).code ?? "")) throw error;
        copyReadable(source, target);
      }
    }
  }
}

/** The binaries under `dir`, replaced when they are not (or no longer) the installed ones. */
function binariesIn(dir: string, installed: PostgresBinaries): PostgresBinaries {
  const stamp = join(dir, "SOURCE");
  const current = existsSync(stamp) ? readFileSync(stamp, "utf8").trim() : undefined;
  if (current !== installed.source) {
    const fresh = `${dir}.new`;
    rmSync(fresh, { recursive: true, force: true });
    linkTree(installed.nativeDir, fresh);
    writeFileSync(join(fresh, "SOURCE"), `${installed.source}\n`, { mode: 0o644 });
    rmSync(dir, { recursive: true, force: true });
    renameSync(fresh, dir);
  }
  return { ...installed, nativeDir: dir, initdb: join(dir, "bin", "initdb"), postgres: join(dir, "bin", "postgres") };
}

type Verdict = { kind: "keep" } | { kind: "remove"; owner: string } | { kind: "unclaimed"; owner: string };

function judge(home: string): Verdict {
  let owner: string;
  try {
    owner = readFileSync(join(home, "owner"), "utf8").trim();
  } catch {
    return { kind: "keep" }; // still being set up, or not ours
  }
  if (!owner) return { kind: "keep" }; // being rewritten by its own launcher right now
  if (!existsSync(owner)) return { kind: "unclaimed", owner };
  let target: string | undefined;
  try {
    target = resolve(owner, readlinkSync(join(owner, "postgres")));
  } catch {
    target = undefined;
  }
  if (target === join(home, "data")) return { kind: "keep" };
  const state = clusterProcesses(join(home, "data"));
  return state.kind === "idle" || state.kind === "stale-lock" ? { kind: "remove", owner } : { kind: "keep" };
}

/**
 * Removes the clusters that a reset left behind: their data dir still exists but links elsewhere (it
 * was deleted and made again). A data dir that is gone may have moved with its clone, so those
 * clusters are kept and named instead. Best effort: a folder it cannot judge is kept.
 */
function removeAbandoned(sharedDir: string, say: (line: string) => void): void {
  const unclaimed: string[] = [];
  for (const name of readdirSync(sharedDir)) {
    const home = join(sharedDir, name);
    try {
      const verdict = judge(home);
      if (verdict.kind === "unclaimed") unclaimed.push(`${home} (was ${verdict.owner})`);
      if (verdict.kind !== "remove") continue;
      rmSync(home, { recursive: true, force: true });
      say(`removed the embedded Postgres cluster ${home}: ${verdict.owner} was reset and no longer uses it`);
    } catch {
      // Unreadable, or removed by another launcher at the same time.
    }
  }
  if (unclaimed.length) {
    say(
      `${unclaimed.length} embedded Postgres cluster(s) belong to data dirs that no longer exist: ${unclaimed.join(", ")}; ` +
        `if those clones are gone, delete the clusters with rm -rf`,
    );
  }
}

/** `<clone folder>-<random>` for the default `.subdata`, else `<data dir's name>-<random>`: readable in a listing. */
function clusterFolderName(dataDir: string): string {
  const name = basename(dataDir) === ".subdata" ? basename(dirname(dataDir)) : basename(dataDir);
  const slug = name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+/, "");
  return `${slug || "subdata"}-${randomBytes(4).toString("hex")}`;
}

/**
 * Where the cluster for `dataDir` lives and which binaries run it. Run as yourself, Postgres reaches
 * whatever you can: the cluster is `<dataDir>/postgres` and the binaries stay in node_modules. Run as
 * root, see SHARED_CLUSTERS_DIR; a cluster found as a folder at `<dataDir>/postgres` moves there.
 */
export function locateCluster(options: {
  dataDir: string;
  binaries: PostgresBinaries;
  /** The user Postgres runs as when we are root; undefined runs it as ourselves. */
  user: OsUser | undefined;
  say(line: string): void;
}): ClusterLocation {
  const link = join(options.dataDir, "postgres");
  const { user } = options;
  if (!user) return { clusterDir: link, binaries: options.binaries };

  const sharedDir = SHARED_CLUSTERS_DIR;
  mkdirSync(options.dataDir, { recursive: true });
  ensureReadableDir(sharedDir);
  removeAbandoned(sharedDir, options.say);

  const existing = lstatOrUndefined(link);
  let clusterDir: string;
  if (existing?.isSymbolicLink()) {
    clusterDir = resolve(options.dataDir, readlinkSync(link));
    ensureReadableDir(dirname(clusterDir)); // its folder was deleted: a new cluster grows in the same place
  } else {
    const home = join(sharedDir, clusterFolderName(options.dataDir));
    ensureReadableDir(home);
    clusterDir = join(home, "data");
    if (existing?.isDirectory()) {
      try {
        renameSync(link, clusterDir);
      } catch (error) {
        rmSync(home, { recursive: true, force: true });
        if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
        throw new Error(
          `the cluster in ${link} must move to ${sharedDir}, where the postgres user can reach it, but that is another ` +
            `file system: move it yourself (mkdir -p ${home} && mv ${link} ${clusterDir} && ln -s ${clusterDir} ${link}) ` +
            `or delete it to start over`,
        );
      }
      options.say(`moved the cluster from ${link} to ${clusterDir}, where the postgres user can reach it`);
    } else if (existing) {
      rmSync(home, { recursive: true, force: true });
      throw new Error(`${link} is neither a folder nor a link to one: remove it`);
    }
    // The link first, then the owner file: a concurrent clean-up only judges folders with an owner.
    symlinkSync(clusterDir, link);
  }
  const home = dirname(clusterDir);
  writeFileSync(join(home, "owner"), `${options.dataDir}\n`, { mode: 0o644 });
  if (!existsSync(clusterDir)) mkdirSync(clusterDir, { mode: 0o700 });
  chmodSync(clusterDir, 0o700);
  chownSync(clusterDir, user.uid, user.gid);
  return { clusterDir, binaries: binariesIn(join(home, "binaries"), options.binaries) };
}
