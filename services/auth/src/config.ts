import { env, loadConfig, natsCredentialShape, natsCredentials, healthConfigShape } from "@subdata/runtime";
import { z } from "zod";

export const authConfigShape = {
  /** SUBDATA_HEALTH_MAX_WATCHES: grpc.health.v1 Watch streams open at once. */
  ...healthConfigShape,
  HOST: env.host(),
  PORT: env.port(8092),
  /** Prometheus /metrics (plain HTTP/1.1); 0 picks a free port. */
  METRICS_PORT: env.port(9092),
  LOG_LEVEL: env.logLevel(),
  DATABASE_URL: env.databaseUrl(),
  DATABASE_POOL_MAX: env.positiveInt(4),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  /** SHA-256 (hex) of the tokens accepted from each caller: one, or two while it is rotated (docs/security.md). */
  SUBDATA_GATEWAY_TOKEN_SHA256: env.tokenHashes(true),
  SUBDATA_CONSOLE_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_APP_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_CLI_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_PAGE_TOKEN_SECRET: env.secret(),
  /** Comma-separated further secrets whose page tokens are honoured (never signed with) during a rotation. */
  SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: env.secretList(),
  NATS_URL: z
    .string()
    .regex(/^(nats|tls|wss?):\/\//, "must be a nats:// URL")
    .default("nats://127.0.0.1:4222"),
  /** NATS_USER, NATS_PASSWORD (and NODE_ENV, which makes them required): auth's own NATS user, which may only publish revocations. */
  ...natsCredentialShape,
  /** Audit rows waiting for their INSERT at most (besides the one running); a RecordRead(s) beyond is UNAVAILABLE at once. */
  SUBDATA_AUDIT_QUEUE_MAX: env.positiveInt(8_192),
  /** An audit row not committed within this makes its RecordRead(s) UNAVAILABLE (the gateway answers 503, no data). */
  SUBDATA_AUDIT_QUEUE_WAIT_MS: env.positiveInt(2_000),
  /** Failed authentications (security_events) older than this are purged hourly; the database refuses less than 1. */
  SUBDATA_SECURITY_EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
};

/** The auth service's configuration; throws a ConfigError naming every bad variable. */
export function loadAuthConfig(source: NodeJS.ProcessEnv) {
  const config = loadConfig(authConfigShape, source);
  natsCredentials(config);
  return config;
}
