import { parseArgs } from "node:util";
import { createProgressPrinter, executeMirror, fromEnvironment, resolveMirrorSettings, resultText, withStopSignals } from "./mirror-command.ts";
import { MirrorError } from "./mirror-error.ts";

const USAGE = `usage: subdata-mirror --api-url URL --to postgres://… [--schema S] [--follow] [--resync] [--api-key-env NAME] [--json]

Copies the subscriptions, charges, orders and line items the API key can see into tables of schema S
(default "subdata") of the target database and keeps them current from the change feed. The key is
read from $SUBDATA_API_KEY (or the variable --api-key-env names). Without --follow it stops once the
copy is up to date; with it, it follows the feed until SIGINT or SIGTERM. Stopped or killed at any
point, the next run resumes where the last one committed.`;

const write = (stream: NodeJS.WritableStream, text: string) => stream.write(text.endsWith("\n") ? text : `${text}\n`);

/** One line, and no control character that could drive the operator's terminal. */
const printable = (text: string) =>
  text.replace(/\s+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);

async function main(argv: readonly string[]): Promise<number> {
  let json = argv.includes("--json");
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        "api-url": { type: "string" },
        to: { type: "string" },
        schema: { type: "string" },
        follow: { type: "boolean" },
        resync: { type: "boolean" },
        "api-key-env": { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    });
    json = values.json === true;
    if (values.help) {
      write(process.stdout, USAGE);
      return 0;
    }
    const settings = resolveMirrorSettings(
      { apiUrl: values["api-url"], to: values.to, schema: values.schema, follow: values.follow, resync: values.resync, apiKeyEnv: values["api-key-env"] },
      fromEnvironment(process.env),
    );
    const onProgress = json ? undefined : createProgressPrinter((line) => write(process.stderr, line));
    const result = await withStopSignals((signal) => executeMirror(settings, { signal, ...(onProgress ? { onProgress } : {}) }));
    write(
      process.stdout,
      json
        ? JSON.stringify({ schema: settings.schema, phase: result.phase, stopped: result.stopped, events_applied: result.eventsApplied, rows: result.rows })
        : resultText(result, settings),
    );
    return 0;
  } catch (error) {
    const code = error instanceof MirrorError ? error.code : (error as { code?: unknown }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? "usage" : "internal";
    const message = error instanceof Error ? error.message : String(error);
    write(process.stderr, `error: ${printable(message)}`);
    if (json) write(process.stdout, JSON.stringify({ error: { code, message } }));
    return code === "usage" || code === "config" ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
