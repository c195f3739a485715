import { isAbsolute, resolve } from "node:path";
import { eventStreamConfigShape, type NatsPermissionSettings } from "@subdata/events";
import { env, loadConfig } from "@subdata/runtime";
import { z } from "zod";

/**
 * The launcher's environment. Everything has a local default: `npm start` must work on a fresh
 * machine with no variables at all. Secrets are not configured here; dev-secrets.ts invents them.
 */
const localConfigShape = {
  /** Use this Postgres (a superuser/owner connection) instead of the embedded one. */
  DATABASE_URL: env.databaseUrl().optional(),
  NATS_URL: env.url().default("nats://127.0.0.1:4222"),
  /** Where the embedded Postgres, NATS data, dev.env and first-run markers live. */
  SUBDATA_DATA_DIR: env.host(".subdata"), // env.host is "a non-empty string with a default"
  EMBEDDED_POSTGRES_PORT: env.port(54329),
  GATEWAY_PORT: env.port(8080),
  QUERY_PORT: env.port(8091),
  AUTH_PORT: env.port(8092),
  WEBHOOK_PORT: env.port(8093),
  /** The outbox relay serves no RPC, only HTTP /healthz and /readyz. */
  RELAY_HEALTH_PORT: env.port(8094),
  /** The console service: PortalSessionService (RPC) and the page (HTTP) on two ports. */
  CONSOLE_PORT: env.port(8095),
  CONSOLE_WEB_PORT: env.port(8081),
  /** Prometheus /metrics of each service (the relay serves it on its health port). 0 picks a free port. */
  GATEWAY_METRICS_PORT: env.port(9080),
  QUERY_METRICS_PORT: env.port(9091),
  AUTH_METRICS_PORT: env.port(9092),
  WEBHOOK_METRICS_PORT: env.port(9093),
  CONSOLE_METRICS_PORT: env.port(9096),
  /** The maintenance task's /metrics (it runs `subdata maintain --every 1h`). */
  MAINTAIN_METRICS_PORT: env.port(9095),
  LOG_LEVEL: env.logLevel(),
  // Read by the relay and the webhook service too (they inherit the environment); the NATS permissions name them.
  SUBDATA_EVENTS_STREAM: eventStreamConfigShape.SUBDATA_EVENTS_STREAM,
  SUBDATA_EVENTS_SUBJECT_PREFIX: eventStreamConfigShape.SUBDATA_EVENTS_SUBJECT_PREFIX,
  SUBDATA_WEBHOOK_CONSUMER: z.string().default("webhook-deliveries"),
  /**
   * `sources` (the default) runs each service's TypeScript through tsx, for development; `bundles` runs the
   * bundles the image runs (`npm run build` writes them; `npm run start:bundled` builds, then starts so).
   */
  SUBDATA_RUN_FROM: env.oneOf(["sources", "bundles"], "sources"),
  /** Where `bundles` finds them: the build's output folder (its bin/<name>.mjs), from the repository root. */
  SUBDATA_BUNDLE_DIR: env.host("dist"),
};

export type RunFrom = { kind: "sources" } | { kind: "bundles"; dir: string };

export interface LocalConfig {
  databaseUrl: string | undefined;
  natsUrl: string;
  /** Absolute. */
  dataDir: string;
  embeddedPostgresPort: number;
  ports: { gateway: number; query: number; auth: number; webhook: number; relayHealth: number; console: number; consoleWeb: number };
  metricsPorts: { gateway: number; query: number; auth: number; webhook: number; maintain: number; console: number };
  logLevel: string;
  /** The stream, subject prefix and consumer that the NATS users' permissions name. */
  natsPermissions: NatsPermissionSettings;
  /** How the services run: their sources through tsx, or the bundles in `dir` (absolute). */
  runFrom: RunFrom;
  /** The repository root: entry files and the default data dir are resolved from it. */
  repoRoot: string;
}

/** A relative SUBDATA_DATA_DIR is taken from the repository root, so any working directory works. */
export function loadLocalConfig(environment: NodeJS.ProcessEnv, repoRoot: string): LocalConfig {
  const config = loadConfig(localConfigShape, environment);
  const dataDir = isAbsolute(config.SUBDATA_DATA_DIR) ? config.SUBDATA_DATA_DIR : resolve(repoRoot, config.SUBDATA_DATA_DIR);
  return {
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    dataDir,
    embeddedPostgresPort: config.EMBEDDED_POSTGRES_PORT,
    ports: {
      gateway: config.GATEWAY_PORT,
      query: config.QUERY_PORT,
      auth: config.AUTH_PORT,
      webhook: config.WEBHOOK_PORT,
      relayHealth: config.RELAY_HEALTH_PORT,
      console: config.CONSOLE_PORT,
      consoleWeb: config.CONSOLE_WEB_PORT,
    },
    metricsPorts: {
      gateway: config.GATEWAY_METRICS_PORT,
      query: config.QUERY_METRICS_PORT,
      auth: config.AUTH_METRICS_PORT,
      webhook: config.WEBHOOK_METRICS_PORT,
      maintain: config.MAINTAIN_METRICS_PORT,
      console: config.CONSOLE_METRICS_PORT,
    },
    logLevel: config.LOG_LEVEL,
    natsPermissions: {
      stream: config.SUBDATA_EVENTS_STREAM,
      subjectPrefix: config.SUBDATA_EVENTS_SUBJECT_PREFIX,
      consumer: config.SUBDATA_WEBHOOK_CONSUMER,
    },
    runFrom: config.SUBDATA_RUN_FROM === "bundles" ? { kind: "bundles", dir: resolve(repoRoot, config.SUBDATA_BUNDLE_DIR) } : { kind: "sources" },
    repoRoot,
  };
}
