import {
  createProgressPrinter,
  DEFAULT_API_KEY_VARIABLE,
  DEFAULT_SCHEMA,
  executeMirror,
  MirrorError,
  resolveMirrorSettings,
  resultText,
} from "@subdata/mirror";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";

interface MirrorCommandOptions {
  apiUrl?: string;
  to?: string;
  schema?: string;
  follow?: boolean;
  resync?: boolean;
  apiKeyEnv?: string;
}

/** Mirror failures keep their own codes; a bad option is invalid_argument, a missing key config, like every command's. */
function cliErrorOf(error: unknown): unknown {
  if (!(error instanceof MirrorError)) return error;
  return new CliError(error.message, error.code === "usage" ? "invalid_argument" : error.code);
}

/** `subdata mirror`: @subdata/mirror behind the CLI's options and output. */
export const registerMirrorCommand: RegisterCommands = (program, context) => {
  program
    .command("mirror")
    .description("copy a merchant's subscriptions, charges and orders into a Postgres schema through the API, and keep it current")
    .requiredOption("--api-url <url>", "the API, e.g. http://127.0.0.1:8080")
    .requiredOption("--to <postgres-url>", "the target database (a password is better given in PGPASSWORD than here)")
    .option("--schema <name>", "the target schema", DEFAULT_SCHEMA)
    .option("--follow", "keep following the change feed until SIGINT/SIGTERM")
    .option("--resync", "empty the copy and its state, then copy everything anew (after cursor_expired)")
    .option("--api-key-env <name>", "the environment variable holding the API key", DEFAULT_API_KEY_VARIABLE)
    .action(async (options: MirrorCommandOptions) => {
      try {
        const settings = resolveMirrorSettings(options, (name) => context.setting(name));
        // SIGTERM/SIGINT: the mirror finishes the page it is applying and returns (stopped: true, exit 0).
        const result = await executeMirror(settings, { signal: context.signal, onProgress: createProgressPrinter((line) => context.output.info(line)) });
        context.output.result(
          { schema: settings.schema, phase: result.phase, stopped: result.stopped, events_applied: result.eventsApplied, rows: result.rows },
          resultText(result, settings),
        );
      } catch (error) {
        throw cliErrorOf(error);
      }
    });
};
