import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseEnv } from "node:util";

const DEV_ENV_PATH = join(".subdata", "dev.env");

/** The name in the root package.json of a subdata checkout, which `npm start` writes dev.env beside. */
const PROJECT_NAME = "subdata";

function isProjectRoot(dir: string): boolean {
  const manifest = join(dir, "package.json");
  if (!existsSync(manifest)) return false;
  try {
    return (JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name === PROJECT_NAME;
  } catch {
    return false;
  }
}

/**
 * The root of the subdata checkout `start` lies in: the nearest directory at or above it whose
 * package.json is subdata's. The search stops at the first repository boundary (.git) and never reads
 * anything on the way, so a dev.env in a parent folder, a shared /tmp or another project is never used.
 */
function findProjectRoot(start: string): string | undefined {
  let dir = start;
  for (;;) {
    if (isProjectRoot(dir)) return dir;
    const parent = dirname(dir);
    if (existsSync(join(dir, ".git")) || parent === dir) return undefined;
    dir = parent;
  }
}

/** The variables of the project's .subdata/dev.env (dotenv syntax, as process.loadEnvFile reads it). */
export function readDevEnv(start: string): Record<string, string> {
  const root = findProjectRoot(start);
  if (root === undefined) return {};
  const file = join(root, DEV_ENV_PATH);
  if (!existsSync(file)) return {};
  return parseEnv(readFileSync(file, "utf8")) as Record<string, string>;
}
