import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseEnv } from "node:util";

const DEV_ENV_PATH = join(".subdata", "dev.env");

/**
 * Finds .subdata/dev.env (written by `npm start`) in `start` or a parent, stopping at the repository
 * root (the first directory holding .git) so a checkout never reads another project's file.
 */
function findDevEnvFile(start: string): string | undefined {
  let dir = start;
  for (;;) {
    const candidate = join(dir, DEV_ENV_PATH);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (existsSync(join(dir, ".git")) || parent === dir) return undefined;
    dir = parent;
  }
}

/** The variables of the dev env file above `start` (dotenv syntax, as process.loadEnvFile reads it). */
export function readDevEnv(start: string): Record<string, string> {
  const file = findDevEnvFile(start);
  if (!file) return {};
  return parseEnv(readFileSync(file, "utf8")) as Record<string, string>;
}
