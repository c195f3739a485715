import { Command, CommanderError } from "commander";
import type { CliContext, RegisterCommands } from "./cli-context.ts";
import { CliError } from "./cli-error.ts";
import { createCliContext } from "./create-cli-context.ts";

export interface RunCliOptions {
  /** process.argv: node, script, then the arguments. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  modules: readonly RegisterCommands[];
}

function errorDocument(code: string, message: string): string {
  return `${JSON.stringify({ error: { code, message } }, null, 2)}\n`;
}

/**
 * Builds the program, runs one command and returns the exit status. Errors never escape as stack
 * traces: a CliError prints its message, anything else "error: <message>"; both exit 1.
 */
export async function runCli(options: RunCliOptions): Promise<number> {
  const program = new Command();
  // Known for sure only after parsing; a usage error can happen before, so look at the raw words.
  let json = options.argv.slice(2).includes("--json");
  const context: CliContext = createCliContext({
    env: options.env,
    cwd: options.cwd,
    isJson: () => json,
    stdout: options.stdout,
    stderr: options.stderr,
  });
  program
    .name("subdata")
    .description("Operate a subdata deployment: migrations, demo data, keys, webhooks, audit.")
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
    })
    .hook("preAction", (_program, action) => {
      json = action.optsWithGlobals().json === true;
    });
  for (const register of options.modules) register(program, context);

  try {
    await program.parseAsync([...options.argv]);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0; // --help, --version
      if (json) options.stdout.write(errorDocument("usage", error.message.replace(/^error: /, "")));
      return 1;
    }
    const code = error instanceof CliError ? error.code : "internal";
    const message = error instanceof Error ? error.message : String(error);
    options.stderr.write(`error: ${message}\n`);
    if (json) options.stdout.write(errorDocument(code, message));
    return 1;
  }
}
