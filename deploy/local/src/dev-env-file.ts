import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";

/** Reads a dotenv file (KEY=VALUE lines, # comments, optional quotes); a missing file is empty. */
export function readDevEnvFile(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const values: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith("#")) continue;
    const [, name, raw] = match as unknown as [string, string, string];
    values[name] = /^(["']).*\1$/.test(raw) ? raw.slice(1, -1) : raw;
  }
  return values;
}

/**
 * Writes the file atomically with mode 0600 (it holds secrets): a temp file created 0600, then a
 * rename, so no reader ever sees a half-written or world-readable file.
 */
export function writeDevEnvFile(path: string, values: Record<string, string>, header: readonly string[]): void {
  const lines = [...header.map((line) => `# ${line}`), ...Object.entries(values).map(([name, value]) => `${name}=${value}`)];
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${lines.join("\n")}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
}
