import { execFileSync } from "node:child_process";
import { cpSync, lstatSync, mkdtempSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
/** Top-level folders a fresh clone does not have (or, for node_modules, gets otherwise). */
const LEFT_OUT = new Set(["node_modules", ".git", ".subdata", "dist", "coverage"]);

export interface PrivateClone {
  /** The fresh folder, mode 0700: what `mktemp -d` makes, and what a home directory usually is. */
  privateDir: string;
  /** The clone inside it (its path has spaces). */
  root: string;
  /** Deletes the clone, and the cluster its `.subdata/postgres` links to when Postgres ran as another user. */
  remove(): void;
}

/**
 * This working tree copied the way a newcomer's clone sits in their home: in a private folder, under a
 * path with spaces. node_modules is hard-linked (copied when another file system holds the temp
 * folder), so the Postgres binaries lie inside the private folder too, as after `npm ci`.
 */
export function privateClone(): PrivateClone {
  const privateDir = mkdtempSync(join(tmpdir(), "subdata private "));
  if ((statSync(privateDir).mode & 0o777) !== 0o700) throw new Error(`expected ${privateDir} to be mode 0700`);
  const root = join(privateDir, "my clone");
  cpSync(repoRoot, root, { recursive: true, filter: (source) => !LEFT_OUT.has(relative(repoRoot, source)) });
  try {
    execFileSync("cp", ["-a", "--link", join(repoRoot, "node_modules"), root], { stdio: ["ignore", "ignore", "pipe"] });
  } catch {
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    execFileSync("cp", ["-a", join(repoRoot, "node_modules"), root], { stdio: ["ignore", "ignore", "pipe"] });
  }
  return {
    privateDir,
    root,
    remove() {
      const link = join(root, ".subdata", "postgres");
      try {
        if (lstatSync(link).isSymbolicLink()) rmSync(dirname(resolve(dirname(link), readlinkSync(link))), { recursive: true, force: true });
      } catch {
        // No cluster was made.
      }
      rmSync(privateDir, { recursive: true, force: true });
    },
  };
}
