import type { LocalConfig } from "./config.ts";
import type { RoleDatabaseUrls } from "./database.ts";
import type { NatsRole } from "@subdata/events";
import { type DevSecrets, devCallerHashes, devNatsUsers } from "./dev-secrets.ts";
import { MALLOC_TUNABLES } from "./node-flags.ts";

/** How the launcher knows a process is ready to serve. */
export type Readiness = { kind: "grpc-health" } | { kind: "http"; path: string } | { kind: "none" };

export interface ProcessSpec {
  name: string;
  /** Relative to the repository root. */
  entry: string;
  /** Arguments after the entry file. */
  args?: readonly string[];
  /** Where it listens; the readiness check asks there. */
  port?: number;
  readiness: Readiness;
  /** Skipped when no NATS is available. */
  needsNats: boolean;
  /** Only the variables the launcher sets; the parent's environment is merged in at spawn time. */
  env: Record<string, string>;
}

export interface StackUrls {
  queryUrl: string;
  authUrl: string;
  webhookUrl: string;
  gatewayUrl: string;
  consoleUrl: string;
  /** Where browsers open the page (SUBDATA_CONSOLE_PUBLIC_URL). */
  consolePublicUrl: string;
}

const HOST = "127.0.0.1";

export function stackUrls(config: LocalConfig): StackUrls {
  return {
    queryUrl: `http://${HOST}:${config.ports.query}`,
    authUrl: `http://${HOST}:${config.ports.auth}`,
    webhookUrl: `http://${HOST}:${config.ports.webhook}`,
    gatewayUrl: `http://${HOST}:${config.ports.gateway}`,
    consoleUrl: `http://${HOST}:${config.ports.console}`,
    consolePublicUrl: `http://${HOST}:${config.ports.consoleWeb}/console`,
  };
}

export interface ProcessTableInput {
  config: LocalConfig;
  secrets: DevSecrets;
  roleUrls: RoleDatabaseUrls;
  natsUrl: string;
}

/**
 * Every process of the stack, in start order. Each service gets its own role's connection string and
 * only the secrets it uses; nothing gets the admin connection.
 */
export function buildProcessTable(input: ProcessTableInput): ProcessSpec[] {
  const { config, secrets, roleUrls, natsUrl } = input;
  const urls = stackUrls(config);
  const common = (port: number | undefined): Record<string, string> => ({
    HOST,
    ...(port === undefined ? {} : { PORT: String(port) }),
    LOG_LEVEL: config.logLevel,
    // Hashes only: a server can check a caller's token but not present it.
    ...devCallerHashes(secrets),
    SUBDATA_PAGE_TOKEN_SECRET: secrets.SUBDATA_PAGE_TOKEN_SECRET,
    NATS_URL: natsUrl,
    SUBDATA_QUERY_URL: urls.queryUrl,
    SUBDATA_AUTH_URL: urls.authUrl,
    SUBDATA_WEBHOOK_URL: urls.webhookUrl,
  });
  // Each NATS client logs in as its own user; the nats-server the launcher starts allows it only its subjects.
  const natsUsers = devNatsUsers(secrets);
  const natsLogin = (role: NatsRole) => ({ NATS_USER: natsUsers[role].user, NATS_PASSWORD: natsUsers[role].password });
  const webhookOnly = {
    SUBDATA_WEBHOOK_SECRET_KEY: secrets.SUBDATA_WEBHOOK_SECRET_KEY,
    // Local receivers (localhost, a LAN box) are the point of a dev stack.
    SUBDATA_WEBHOOK_ALLOW_PRIVATE: "true",
  };
  return [
    {
      name: "query",
      entry: "services/query/src/main.ts",
      port: config.ports.query,
      readiness: { kind: "grpc-health" },
      needsNats: false,
      env: { ...common(config.ports.query), METRICS_PORT: String(config.metricsPorts.query), DATABASE_URL: roleUrls.query },
    },
    {
      name: "auth",
      entry: "services/auth/src/main.ts",
      port: config.ports.auth,
      readiness: { kind: "grpc-health" },
      needsNats: false,
      env: { ...common(config.ports.auth), METRICS_PORT: String(config.metricsPorts.auth), DATABASE_URL: roleUrls.auth, ...natsLogin("auth") },
    },
    {
      name: "webhook",
      entry: "services/webhook/src/main.ts",
      port: config.ports.webhook,
      readiness: { kind: "grpc-health" },
      needsNats: true,
      env: {
        ...common(config.ports.webhook),
        METRICS_PORT: String(config.metricsPorts.webhook),
        DATABASE_URL: roleUrls.webhook,
        ...webhookOnly,
        ...natsLogin("webhook"),
      },
    },
    {
      name: "relay",
      entry: "services/relay/src/main.ts",
      port: config.ports.relayHealth,
      // Ready once a round reached both Postgres and NATS.
      readiness: { kind: "http", path: "/readyz" },
      needsNats: true,
      env: {
        ...common(undefined),
        SUBDATA_RELAY_HEALTH_PORT: String(config.ports.relayHealth),
        DATABASE_URL: roleUrls.webhook,
        ...webhookOnly,
        ...natsLogin("relay"),
      },
    },
    {
      name: "gateway",
      entry: "gateway/src/main.ts",
      port: config.ports.gateway,
      readiness: { kind: "http", path: "/readyz" },
      needsNats: false,
      // No shutdown pause locally: nothing balances load here, and Ctrl-C should be quick.
      env: {
        ...common(config.ports.gateway),
        METRICS_PORT: String(config.metricsPorts.gateway),
        SUBDATA_SHUTDOWN_DELAY_MS: "0",
        SUBDATA_GATEWAY_TOKEN: secrets.SUBDATA_GATEWAY_TOKEN,
        ...natsLogin("gateway"),
      },
    },
    {
      name: "console",
      entry: "services/console/src/main.ts",
      port: config.ports.console,
      readiness: { kind: "grpc-health" },
      needsNats: false,
      env: {
        ...common(config.ports.console),
        METRICS_PORT: String(config.metricsPorts.console),
        DATABASE_URL: roleUrls.console,
        SUBDATA_CONSOLE_TOKEN: secrets.SUBDATA_CONSOLE_TOKEN,
        SUBDATA_CONSOLE_WEB_PORT: String(config.ports.consoleWeb),
        // Plain http on loopback: the cookie cannot be Secure here (it is whenever this URL is https).
        SUBDATA_CONSOLE_PUBLIC_URL: urls.consolePublicUrl,
      },
    },
    {
      // The retention task on a timer: Kubernetes runs the same command as an hourly CronJob.
      name: "maintain",
      entry: "services/cli/src/main.ts",
      args: ["maintain", "--every", "1h", "--metrics-port", String(config.metricsPorts.maintain)],
      readiness: { kind: "none" },
      needsNats: false,
      // Its own role, and no service secret: it calls no service.
      env: { HOST, LOG_LEVEL: config.logLevel, DATABASE_URL: roleUrls.maintain },
    },
  ];
}

/**
 * The parent's environment minus what would leak the admin connection or clash, plus `spec.env`; with
 * the image's malloc settings unless the parent sets GLIBC_TUNABLES (empty turns them off).
 */
export function childEnvironment(parent: NodeJS.ProcessEnv, spec: ProcessSpec): NodeJS.ProcessEnv {
  const { DATABASE_URL: _admin, PORT: _port, HOST: _host, ...rest } = parent;
  return { GLIBC_TUNABLES: MALLOC_TUNABLES, ...rest, ...spec.env };
}
