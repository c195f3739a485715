import { SingleBar } from "cli-progress";
import type { CliContext, CliOutput, Progress } from "./cli-context.ts";
import { configError } from "./cli-error.ts";
import { readDevEnv } from "./dev-env.ts";

export interface CliContextOptions {
  env: NodeJS.ProcessEnv;
  /** Where the CLI runs: .subdata/dev.env is read only from the subdata checkout holding it. */
  cwd: string;
  /** Read when printing: --json is known only once the command line is parsed. */
  isJson: () => boolean;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  signal: AbortSignal;
}

const silentProgress: Progress = { update: () => {}, stop: () => {} };

/**
 * Settings: the real environment wins; .subdata/dev.env (read once, lazily) fills the gaps, the way
 * process.loadEnvFile never overrides a variable that is already set.
 */
export function createCliContext(options: CliContextOptions): CliContext {
  let devEnv: Record<string, string> | undefined;
  const setting = (name: string): string | undefined => {
    const value = options.env[name];
    if (value !== undefined && value !== "") return value;
    devEnv ??= readDevEnv(options.cwd);
    const fallback = devEnv[name];
    return fallback === "" ? undefined : fallback;
  };
  const output: CliOutput = {
    result(json, text) {
      options.stdout.write(options.isJson() ? `${JSON.stringify(json, null, 2)}\n` : text.endsWith("\n") ? text : `${text}\n`);
    },
    info(text) {
      if (!options.isJson()) options.stderr.write(`${text}\n`);
    },
    progress(total, label = "") {
      if (options.isJson() || !options.stderr.isTTY) return silentProgress;
      const bar = new SingleBar({
        stream: options.stderr,
        format: `${label ? `${label} ` : ""}[{bar}] {percentage}% | {value}/{total} | {eta_formatted} left`,
        hideCursor: true,
      });
      bar.start(total, 0);
      return { update: (done) => bar.update(done), stop: () => bar.stop() };
    },
  };
  return {
    setting,
    requireSetting(name) {
      const value = setting(name);
      if (value === undefined) throw configError(`${name} is not set: set it or run npm start once (it writes .subdata/dev.env)`);
      return value;
    },
    output,
    stdout: options.stdout,
    signal: options.signal,
  };
}
