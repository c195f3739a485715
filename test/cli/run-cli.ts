import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../services/cli/bin/subdata.js", import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** An empty directory for HOME and cwd, so no .subdata/dev.env is picked up by accident. */
export function emptyDirectory(): string {
  return mkdtempSync(join(tmpdir(), "subdata-cli-test-"));
}

/**
 * Runs the real CLI (bin/subdata.js, as npx would) in a child process with only the environment
 * given (plus PATH), from an empty directory unless told otherwise.
 */
export function runCli(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliRun> {
  const home = emptyDirectory();
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: options.cwd ?? home,
        env: { PATH: process.env.PATH ?? "", HOME: home, ...options.env },
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          reject(error);
          return;
        }
        resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
  });
}

/** Parses stdout as the one JSON document --json promises. */
export function json<T = Record<string, unknown>>(run: CliRun): T {
  return JSON.parse(run.stdout) as T;
}
