import { env, loadConfig, natsCredentials, placeholderProblem, healthConfigShape } from "@subdata/runtime";
import { z } from "zod";
import { deliveryPipelineConfigShape, inFlightCaps } from "./pipeline-config.ts";

const BASE64_KEY = /^[A-Za-z0-9+/]+={0,2}$/;

/** Base64 of exactly 32 random bytes: an AES-256 key, the main one or a previous one. */
function webhookSecretKey() {
  return z
    .string({ message: "must be set (base64 of 32 random bytes; no default)" })
    .refine((value) => BASE64_KEY.test(value) && Buffer.from(value, "base64").length === 32, {
      message: "must be base64 of exactly 32 bytes (e.g. openssl rand -base64 32)",
    })
    .refine((value) => placeholderProblem(value) === undefined, {
      message: "is not a generated key (an example's value, or too uniform); generate one (e.g. openssl rand -base64 32)",
    });
}

/** The webhook service's environment, validated at start-up; secrets have no default anywhere. */
export const webhookConfigShape = {
  /** SUBDATA_HEALTH_MAX_WATCHES: grpc.health.v1 Watch streams open at once. */
  ...healthConfigShape,
  // The delivery pipeline's variables (SUBDATA_WEBHOOK_ALLOW_PRIVATE, SUBDATA_WEBHOOK_RETRY_SCHEDULE,
  // NATS_URL, SUBDATA_EVENTS_STREAM, …): one process, one validated environment.
  ...deliveryPipelineConfigShape,
  HOST: env.host(),
  PORT: env.port(8093),
  /** Prometheus /metrics (plain HTTP/1.1); 0 picks a free port. */
  METRICS_PORT: env.port(9093),
  LOG_LEVEL: env.logLevel(),
  /** The subdata_webhook role's connection. */
  DATABASE_URL: env.databaseUrl(),
  DATABASE_POOL_MAX: env.positiveInt(4),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  /** SHA-256 (hex) of the tokens accepted from each caller: one, or two while it is rotated (docs/security.md). */
  SUBDATA_CONSOLE_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_APP_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_CLI_TOKEN_SHA256: env.tokenHashes(false),
  SUBDATA_PAGE_TOKEN_SECRET: env.secret(),
  /** Comma-separated further secrets whose page tokens are honoured (never signed with) during a rotation. */
  SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: env.secretList(),
  /** Base64 of exactly 32 random bytes: seals signing secrets at rest (AES-256-GCM). */
  SUBDATA_WEBHOOK_SECRET_KEY: webhookSecretKey(),
  /**
   * Comma-separated keys of the same form that still open secrets sealed before a key rotation (never
   * used to seal); dropped once `subdata webhooks reencrypt-secrets` has moved every secret to the main key.
   */
  SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: env.list(webhookSecretKey()),
  /**
   * Local development only: plain http and private, loopback and link-local targets are allowed, both
   * when endpoints are registered (url-policy.ts) and when deliveries connect (the pipeline).
   */
  SUBDATA_WEBHOOK_ALLOW_PRIVATE: env.boolean(false),
};

/** Throws a ConfigError naming every bad variable (never their values). */
export function loadWebhookConfig(environment: NodeJS.ProcessEnv) {
  const config = loadConfig(webhookConfigShape, environment);
  natsCredentials(config);
  inFlightCaps(config);
  return config;
}
