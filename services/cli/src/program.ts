import { Command, CommanderError } from "commander";
import cliPackage from "../package.json" with { type: "json" };
import type { CliContext, RegisterCommands } from "./cli-context.ts";
import { CliError } from "./cli-error.ts";
import { createCliContext } from "./create-cli-context.ts";
import { StopRequested } from "./stop-signals.ts";

export interface RunCliOptions {
  /** process.argv: node, script, then the arguments. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  modules: readonly RegisterCommands[];
  /** Aborted by SIGTERM/SIGINT (main.ts): the running command stops, and runCli answers 128 + the signal's number. */
  signal?: AbortSignal;
}

function errorDocument(code: string, message: string): string {
  return `${JSON.stringify({ error: { code, message } }, null, 2)}\n`;
}

const ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * Errors echo what was typed: control characters are escaped so the message stays on one line and an
 * argument cannot drive the operator's terminal (ANSI escapes, carriage returns).
 */
function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A real argv never holds NUL (execve ends strings there) and Postgres text cannot store it, so a
 * NUL reaching runCli is refused here, naming the argument, instead of failing later as a database
 * error.
 */
function refuseNul(command: Command): void {
  for (const option of command.options) {
    const value: unknown = command.getOptionValue(option.attributeName());
    if (typeof value === "string" && value.includes("\u0000")) throw new CliError(`${option.long} must not contain a NUL character`);
  }
  command.registeredArguments.forEach((argument, index) => {
    const value: unknown = command.processedArgs[index];
    if (typeof value === "string" && value.includes("\u0000")) {
      throw new CliError(`${argument.name().toUpperCase().replaceAll("-", "_")} must not contain a NUL character`);
    }
  });
}

/**
 * Builds the program, runs one command and returns the exit status. Errors never escape as stack
 * traces: a CliError prints its message, anything else "error: <message>"; both exit 1.
 */
export async function runCli(options: RunCliOptions): Promise<number> {
  const program = new Command();
  // Known for sure only after parsing; a usage error can happen before, so look at the raw words.
  let json = options.argv.slice(2).includes("--json");
  const signal = options.signal ?? new AbortController().signal;
  const context: CliContext = createCliContext({
    env: options.env,
    cwd: options.cwd,
    isJson: () => json,
    stdout: options.stdout,
    stderr: options.stderr,
    signal,
  });
  program
    .name("subdata")
    .description("Operate a subdata deployment: migrations, demo data, app-like changes for development, keys, webhooks, audit.")
    .option("-V, --version", "print the version of subdata")
    .option("--json", "print one JSON document on stdout and nothing else")
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({
      writeOut: (text) => options.stdout.write(text),
      // With --json a usage error goes out as a JSON document instead (below).
      writeErr: (text) => {
        if (!json) options.stderr.write(text);
      },
      // Commander's own errors quote the offending word, escaped like ours; its hint, made of the
      // program's own names and appended last, keeps its own line.
      outputError: (text, write) => {
        const [, message = text, hint = ""] = /^([\s\S]*?)(\n\(Did you mean [^\n]*\?\))?\n?$/.exec(text) ?? [];
        write(`${printable(message)}${hint}\n`);
      },
    })
    .hook("preAction", (_program, action) => {
      json = action.optsWithGlobals().json === true;
      refuseNul(action);
    });
  // Commander's own --version cannot honour --json; like --help it wins wherever it stands among the words.
  program.on("option:version", () => {
    options.stdout.write(json ? `${JSON.stringify({ version: cliPackage.version })}\n` : `${cliPackage.version}\n`);
    throw new CommanderError(0, "commander.version", cliPackage.version);
  });
  for (const register of options.modules) register(program, context);

  try {
    await program.parseAsync([...options.argv]);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0; // --help, --version
      // Without a command commander prints the help (not with --json) and says only "(outputHelp)".
      const message = error.code === "commander.help" ? "a command is required (run with --help to list them)" : error.message.replace(/^error: /, "");
      if (json) options.stdout.write(errorDocument("usage", message));
      return 1;
    }
    // Whatever the interrupted command threw (a closed connection, an abort), the cause is the signal.
    if (signal.aborted && signal.reason instanceof StopRequested) {
      options.stderr.write(`error: ${signal.reason.message}\n`);
      if (json) options.stdout.write(errorDocument("stopped", signal.reason.message));
      return signal.reason.exitStatus;
    }
    const code = error instanceof CliError ? error.code : "internal";
    const message = error instanceof Error ? error.message : String(error);
    options.stderr.write(`error: ${printable(message)}\n`);
    if (json && !(error instanceof CliError && error.resultPrinted)) options.stdout.write(errorDocument(code, message));
    return 1;
  }
}
