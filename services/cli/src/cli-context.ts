import type { Command } from "commander";

/**
 * What every command module receives. Commands print with `output`, which honours --json: a command
 * hands it both a machine-readable value and the human text.
 */
export interface CliContext {
  /** Reads a setting from the environment, falling back to .subdata/dev.env written by npm start. */
  setting(name: string): string | undefined;
  /** Like setting(), but exits with a clear message naming the variable when it is missing. */
  requireSetting(name: string): string;
  output: CliOutput;
  /** Standard output itself, for a command whose output is data (an export) rather than a result. */
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  /** Aborted when the CLI is asked to stop (SIGTERM, SIGINT): stop at the next safe point, close connections. */
  signal: AbortSignal;
}

export interface CliOutput {
  /** Prints `json` (as one JSON document) when --json was given, `text` otherwise. */
  result(json: unknown, text: string): void;
  /** Progress and notes for humans, on stderr; silent with --json. */
  info(text: string): void;
  /** A progress bar on stderr, shown only when stderr is a terminal and --json was not given. */
  progress(total: number, label?: string): Progress;
}

export interface Progress {
  update(done: number): void;
  stop(): void;
}

/** A command module adds its commands to the program. */
export type RegisterCommands = (program: Command, context: CliContext) => void;
