import { apiBaseUrl, createSubdataClient, type FetchFunction } from "@subdata/client";
import pg from "pg";
import { MirrorError, redactedUrl, toMirrorError } from "./mirror-error.ts";
import { runMirror, type MirrorProgress, type MirrorResult } from "./run-mirror.ts";
import { RESOURCES, type Resource } from "./tables.ts";
import { SCHEMA_NAME } from "./target-schema.ts";

/**
 * What `subdata-mirror` and `npx subdata mirror` share: the options, read and checked the same way, and
 * one run with its connections opened and closed. The key comes from an environment variable, never
 * from the command line, where `ps` would show it.
 */

export const DEFAULT_SCHEMA = "subdata";
export const DEFAULT_API_KEY_VARIABLE = "SUBDATA_API_KEY";

export interface MirrorArguments {
  apiUrl?: string;
  to?: string;
  schema?: string;
  follow?: boolean;
  resync?: boolean;
  apiKeyEnv?: string;
}

export interface MirrorSettings {
  apiUrl: string;
  apiKey: string;
  apiKeyVariable: string;
  targetUrl: string;
  schema: string;
  follow: boolean;
  resync: boolean;
}

/** The environment as settings: only its own variables (a name like `constructor` is no setting). */
export const fromEnvironment =
  (env: Record<string, string | undefined>) =>
  (name: string): string | undefined =>
    Object.hasOwn(env, name) ? env[name] : undefined;

/** Environment variable names the key may come from. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Checks the arguments, then reads the key. A bad option is a MirrorError with code usage naming the
 * option (never echoing the value, which may hold anything); a missing key is code config, naming the
 * variable.
 */
export function resolveMirrorSettings(args: MirrorArguments, readSetting: (name: string) => unknown): MirrorSettings {
  if (args.apiUrl === undefined) throw new MirrorError("--api-url is required (e.g. http://127.0.0.1:8080)", "usage");
  if (args.to === undefined) throw new MirrorError("--to is required: the target database, postgres://…", "usage");
  let apiUrl: string;
  try {
    apiUrl = apiBaseUrl(args.apiUrl);
  } catch {
    throw new MirrorError("--api-url is invalid: expected http(s)://host[:port], optionally with the API's path (/api/v1)", "usage");
  }
  let target: URL;
  try {
    target = new URL(args.to);
  } catch {
    throw new MirrorError("--to is invalid: expected postgres://user@host:port/database", "usage");
  }
  if (target.protocol !== "postgres:" && target.protocol !== "postgresql:") {
    throw new MirrorError(`--to must be a postgres:// URL, got ${target.protocol}`, "usage");
  }
  const schema = args.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) throw new MirrorError("--schema must be a lower-case identifier: a-z or _, then a-z, 0-9 or _ (63 at most)", "usage");
  const apiKeyVariable = args.apiKeyEnv ?? DEFAULT_API_KEY_VARIABLE;
  if (!VARIABLE_NAME.test(apiKeyVariable)) throw new MirrorError("--api-key-env must be an environment variable name (letters, digits and _)", "usage");
  const apiKey = readSetting(apiKeyVariable);
  if (typeof apiKey !== "string" || apiKey === "") {
    throw new MirrorError(
      `${apiKeyVariable} is not set: put the API key (sds_…) in it${args.apiKeyEnv ? "" : ", or name another variable with --api-key-env"}`,
      "config",
    );
  }
  return { apiUrl, apiKey, apiKeyVariable, targetUrl: args.to, schema, follow: args.follow === true, resync: args.resync === true };
}

export interface ExecuteOptions {
  signal?: AbortSignal;
  onProgress?: (progress: MirrorProgress) => void;
  /** Replaces globalThis.fetch for the API (a proxy agent, instrumentation). */
  fetch?: FetchFunction;
  /** Retries of one API request before the run fails (following retries without bound). */
  maxRetries?: number;
}

/** One run: connects, mirrors, closes; every failure comes out as a MirrorError with a one-line message. */
export async function executeMirror(settings: MirrorSettings, options: ExecuteOptions = {}): Promise<MirrorResult> {
  const client = createSubdataClient({
    baseUrl: settings.apiUrl,
    apiKey: settings.apiKey,
    userAgent: "subdata-mirror/1",
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
  });
  const pool = new pg.Pool({ connectionString: settings.targetUrl, max: 5, application_name: "subdata-mirror" });
  // An idle connection that breaks is replaced on next use; the query that needed it reports the error.
  pool.on("error", () => {});
  try {
    return await runMirror({
      client,
      pool,
      schema: settings.schema,
      follow: settings.follow,
      resync: settings.resync,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  } catch (error) {
    throw toMirrorError(error, { apiUrl: settings.apiUrl, target: redactedUrl(settings.targetUrl), apiKeyVariable: settings.apiKeyVariable });
  } finally {
    await pool.end().catch(() => {});
  }
}

/**
 * Human progress lines: every phase change, and running totals at most every `intervalMs` while pages
 * stream in.
 */
export function createProgressPrinter(write: (line: string) => void, now: () => number = Date.now, intervalMs = 2_000): (progress: MirrorProgress) => void {
  const walked: Record<Resource, number> = { subscriptions: 0, charges: 0, orders: 0 };
  let events = 0;
  let caughtUp = false;
  let lastPrinted = 0;
  const counts = () => RESOURCES.map((resource) => `${walked[resource].toLocaleString("en-US")} ${resource}`).join(", ");
  return (progress) => {
    switch (progress.kind) {
      case "started":
        write(
          progress.resumed
            ? `resuming (${progress.phase === "walk" ? "copying the lists" : "applying the feed"})`
            : "starting: taking the feed's head, then copying the lists",
        );
        return;
      case "walk-page":
        walked[progress.resource] += progress.rows;
        if (now() - lastPrinted >= intervalMs) {
          lastPrinted = now();
          write(`copied ${counts()}`);
        }
        return;
      case "walked":
        write(`${progress.resource}: all copied (${walked[progress.resource].toLocaleString("en-US")} this run)`);
        return;
      case "feed-page": {
        events += progress.events;
        const changed = progress.caughtUp !== caughtUp;
        caughtUp = progress.caughtUp;
        if (changed || (progress.events > 0 && now() - lastPrinted >= intervalMs)) {
          lastPrinted = now();
          write(`feed: ${events.toLocaleString("en-US")} events applied this run${caughtUp ? ", caught up" : ""}`);
        }
        return;
      }
    }
  };
}

export function resultText(result: MirrorResult, settings: Pick<MirrorSettings, "schema">): string {
  const rows = Object.entries(result.rows)
    .map(([table, count]) => `${count.toLocaleString("en-US")} ${table}`)
    .join(", ");
  const how = result.stopped ? "stopped; run again to resume" : result.phase === "feed" ? "up to date" : "copy incomplete";
  return `${settings.schema}: ${rows}; ${result.eventsApplied.toLocaleString("en-US")} feed events applied in all (${how})`;
}

/**
 * Runs `work` with a signal that SIGINT and SIGTERM abort: the mirror finishes the page it is applying
 * and returns. A second signal exits at once (the open transaction rolls back).
 */
export async function withStopSignals<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(name === "SIGTERM" ? 143 : 130);
    controller.abort(new Error(`stopped by ${name}`));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await work(controller.signal);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
