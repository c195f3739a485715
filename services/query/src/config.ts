import { env, loadConfig, healthConfigShape } from "@subdata/runtime";

/** The query service's environment, validated at start-up; secrets have no default anywhere. */
export const queryConfigShape = {
  /** SUBDATA_HEALTH_MAX_WATCHES: grpc.health.v1 Watch streams open at once. */
  ...healthConfigShape,
  HOST: env.host(),
  PORT: env.port(8091),
  /** Prometheus /metrics (plain HTTP/1.1); 0 picks a free port. */
  METRICS_PORT: env.port(9091),
  LOG_LEVEL: env.logLevel(),
  /** The subdata_query role's connection: it can only SELECT. */
  DATABASE_URL: env.databaseUrl(),
  DATABASE_POOL_MAX: env.positiveInt(4),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  /** Change-feed reads that may wait (long poll) at once in this process; more answer RESOURCE_EXHAUSTED. */
  SUBDATA_FEED_MAX_WAITERS: env.positiveInt(10_000),
  /**
   * While change-feed reads wait, how often the service looks for new commits (one statement on its
   * own connection): a long poll returns within this of a commit.
   */
  SUBDATA_COMMIT_WATCH_INTERVAL_MS: env.positiveInt(10),
  /** SHA-256 (hex) of the tokens accepted from each caller: one, or two while it is rotated (docs/security.md). */
  SUBDATA_GATEWAY_TOKEN_SHA256: env.tokenHashes(true),
  SUBDATA_PAGE_TOKEN_SECRET: env.secret(),
  /** Comma-separated further secrets whose page tokens are honoured (never signed with) during a rotation. */
  SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: env.secretList(),
};

/** Throws a ConfigError naming every bad variable (never their values). */
export function loadQueryConfig(environment: NodeJS.ProcessEnv) {
  return loadConfig(queryConfigShape, environment);
}
