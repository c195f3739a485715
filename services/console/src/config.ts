import { env, loadConfig, healthConfigShape } from "@subdata/runtime";
import { z } from "zod";

export const consoleConfigShape = {
  /** SUBDATA_HEALTH_MAX_WATCHES: grpc.health.v1 Watch streams open at once. */
  ...healthConfigShape,
  HOST: env.host(),
  /** PortalSessionService (Connect RPC, h2c) for the app: internal only. */
  PORT: env.port(8095),
  /** The page (HTTP/1.1) for merchants' browsers: exposed like the gateway. */
  SUBDATA_CONSOLE_WEB_PORT: env.port(8081),
  /** Prometheus /metrics (plain HTTP/1.1); 0 picks a free port. */
  METRICS_PORT: env.port(9096),
  LOG_LEVEL: env.logLevel(),
  DATABASE_URL: env.databaseUrl(),
  DATABASE_POOL_MAX: env.positiveInt(4),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  /** Sent to the auth and webhook services: the console's own credential. */
  SUBDATA_CONSOLE_TOKEN: env.secret(),
  /** SHA-256 (hex) of the tokens accepted from each caller: one, or two while it is rotated (docs/security.md). */
  SUBDATA_APP_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_CLI_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_AUTH_URL: env.url().default("http://127.0.0.1:8092"),
  SUBDATA_WEBHOOK_URL: env.url().default("http://127.0.0.1:8093"),
  /**
   * Where browsers reach the page, up to its path ("https://subdata.example.com/console"). Links are
   * minted under it; an https URL makes the session cookie Secure. No trailing slash.
   */
  SUBDATA_CONSOLE_PUBLIC_URL: env
    .url()
    .refine((value) => /^https?:\/\//.test(value) && !value.endsWith("/"), "must be an http(s) URL without a trailing slash")
    .refine((value) => new URL(value).pathname === "/console", "must end in /console (the page's path)"),
  /**
   * The app's origins allowed to frame the page (CSP frame-ancestors), space-separated; empty means it
   * cannot be framed. Framing across sites does not work anyway: the cookie is SameSite=Strict.
   */
  SUBDATA_CONSOLE_FRAME_ANCESTORS: z
    .string()
    .default("")
    .refine((value) => value === "" || value.split(" ").every((origin) => /^https?:\/\/[^\s/;,']+$/.test(origin)), "must be space-separated origins"),
  /** Milliseconds an upstream call may take before the page shows an error. */
  SUBDATA_UPSTREAM_TIMEOUT_MS: env.positiveInt(10_000),
};

/** The console service's configuration; throws a ConfigError naming every bad variable. */
export function loadConsoleConfig(source: NodeJS.ProcessEnv) {
  return loadConfig(consoleConfigShape, source);
}
