import { join, relative } from "node:path";
import type { NatsSetup } from "./nats.ts";
import type { RunningService, SkippedService } from "./processes.ts";

const READY_LINE = "subdata is ready";

/** A connection string without its password, for display. */
function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "";
  return parsed.toString();
}

export interface SummaryInput {
  repoRoot: string;
  dataDir: string;
  devEnvPath: string;
  databaseUrl: string;
  /** Where the embedded cluster's data lives; undefined when DATABASE_URL names the server. */
  embeddedPostgres: { clusterDir: string } | undefined;
  nats: NatsSetup;
  running: readonly RunningService[];
  skipped: readonly SkippedService[];
}

const describe: Record<string, (url: string) => string> = {
  gateway: (url) => `${url}/api/v1  (REST, the public edge)`,
  query: (url) => `${url}  (Connect RPC, h2c)`,
  auth: (url) => `${url}  (Connect RPC, h2c)`,
  webhook: (url) => `${url}  (Connect RPC, h2c)`,
  relay: (url) => `${url}/readyz  (health only: the outbox relay serves no RPC)`,
  console: (url) => `${url}  (Connect RPC, h2c: portal sessions for the app)`,
};

/** Processes that serve nothing on a port of their own. */
const describeUnbound: Record<string, string> = {
  maintain: "hourly: audit partitions, retention, table figures (`npx subdata maintain` runs it once)",
};

/** Where everything listens. Never a secret: passwords are stripped, tokens are not mentioned. */
export function renderSummary(input: SummaryInput): string[] {
  const show = (path: string) => {
    const rel = relative(input.repoRoot, path);
    return rel && !rel.startsWith("..") ? rel : path;
  };
  const row = (name: string, text: string) => `  ${name.padEnd(9)} ${text}`;
  const lines = [READY_LINE];
  for (const { spec } of input.running) {
    const url = `http://127.0.0.1:${spec.port}`;
    lines.push(row(spec.name, spec.port === undefined ? (describeUnbound[spec.name] ?? "running") : (describe[spec.name]?.(url) ?? url)));
  }
  const page = input.running.find(({ spec }) => spec.name === "console")?.spec.env.SUBDATA_CONSOLE_PUBLIC_URL;
  if (page) lines.push(row("page", `${page}  (the merchant's API & integrations page; \`npx subdata console open --merchant M\` mints a link)`));
  for (const { spec, reason } of input.skipped) lines.push(row(spec.name, `skipped: ${reason}`));
  const postgres = withoutPassword(input.databaseUrl);
  const link = join(input.dataDir, "postgres");
  const embedded = input.embeddedPostgres;
  let postgresText = `${postgres}  (DATABASE_URL)`;
  if (embedded) {
    const where = embedded.clusterDir === link ? show(link) : `${embedded.clusterDir}, linked from ${show(link)}`;
    postgresText = `${postgres}  (embedded, data in ${where})`;
  }
  lines.push(row("postgres", postgresText));
  const natsText = {
    external: `${input.nats.url}  (already running)`,
    started: `${input.nats.url}  (nats-server started here, JetStream data in ${show(input.dataDir)}/nats)`,
    missing: `none: events and webhooks are off`,
    "no-jetstream": `${input.nats.url}  answers without JetStream: events and webhooks are off`,
  }[input.nats.kind];
  lines.push(row("nats", natsText));
  lines.push(row("settings", `${show(input.devEnvPath)}  (generated secrets and URLs; \`npx subdata …\` reads it)`));
  lines.push("Press Ctrl-C to stop.");
  return lines;
}
