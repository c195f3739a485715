import { env, loadConfig, natsCredentialShape, natsCredentials } from "@subdata/runtime";
import { z } from "zod";

/**
 * Fastify's trustProxy: "false" (default: the socket address is the client), "true" (trust every hop:
 * only behind a proxy that overwrites X-Forwarded-For), a hop count ("1"), or a comma-separated list
 * of proxy addresses/CIDRs ("10.0.0.0/8,127.0.0.1").
 */
const trustProxy = () =>
  z
    .string()
    .default("false")
    .transform((value, context): boolean | number | string[] => {
      const text = value.trim();
      if (text === "false" || text === "") return false;
      if (text === "true") return true;
      if (/^\d+$/.test(text)) return Number(text);
      const list = text
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean);
      if (list.every((part) => /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(part))) return list;
      context.addIssue({ code: "custom", message: "must be true, false, a hop count or a comma-separated list of addresses/CIDRs" });
      return z.NEVER;
    });

/** The gateway's environment, validated at start-up; its token has no default anywhere. */
export const gatewayConfigShape = {
  HOST: env.host(),
  PORT: env.port(8080),
  /** Prometheus /metrics (plain HTTP/1.1, not on the public port); 0 picks a free port. */
  METRICS_PORT: env.port(9080),
  /**
   * After SIGTERM, /readyz answers 503 for this long before the listener closes, so load balancers
   * stop sending first (keep it below terminationGracePeriodSeconds minus the drain time).
   */
  SUBDATA_SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  LOG_LEVEL: env.logLevel(),
  SUBDATA_QUERY_URL: env.url().default("http://127.0.0.1:8091"),
  SUBDATA_AUTH_URL: env.url().default("http://127.0.0.1:8092"),
  SUBDATA_GATEWAY_TOKEN: env.secret(),
  NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
  /** NATS_USER, NATS_PASSWORD (and NODE_ENV, which makes them required): the gateway's own NATS user, which may only subscribe to revocations. */
  ...natsCredentialShape,
  /** Deadline of every upstream RPC. */
  SUBDATA_UPSTREAM_TIMEOUT_MS: env.positiveInt(5_000),
  /** Token bucket per API key and gateway instance: this many requests per window, bursts up to it. */
  SUBDATA_RATE_LIMIT_QUOTA: env.positiveInt(100),
  SUBDATA_RATE_LIMIT_WINDOW_SECONDS: env.positiveInt(1),
  /**
   * Failed authentications (missing, invalid, revoked, expired keys) per client address and gateway
   * instance: this many per window, bursts up to it; beyond, 429 without asking the auth service.
   */
  SUBDATA_AUTH_FAILURE_QUOTA: env.positiveInt(20),
  SUBDATA_AUTH_FAILURE_WINDOW_SECONDS: env.positiveInt(60),
  /** Client addresses tracked at most (least recently seen forgotten first): bounds the memory. */
  SUBDATA_AUTH_FAILURE_MAX_CLIENTS: env.positiveInt(100_000),
  /** How long a verified key is trusted without asking the auth service (capped by its expires_at). */
  // 1 s: the contract's revocation bound holds even if a revocation notice never arrives (auth cut off
  // from NATS, or a crash between commit and publish); one auth call per key per second is cheap.
  SUBDATA_API_KEY_CACHE_TTL_SECONDS: env.positiveInt(1),
  SUBDATA_API_KEY_CACHE_MAX_ENTRIES: env.positiveInt(10_000),
  /** Responses smaller than this are never compressed (gzip costs more than it saves). */
  SUBDATA_GZIP_THRESHOLD_BYTES: env.positiveInt(1_024),
  SUBDATA_TRUST_PROXY: trustProxy(),
  /**
   * Reads waiting for their audit record in this gateway (the RecordReads call in flight aside); a read
   * beyond answers 503 at once, with no data. Bounds the memory a slow auth service can make us hold.
   */
  SUBDATA_AUDIT_QUEUE_MAX: env.positiveInt(4_096),
  /** How long a read may wait for its audit record; past it, 503 with no data (never served unaudited). */
  SUBDATA_AUDIT_QUEUE_WAIT_MS: env.positiveInt(2_000),
  /** Query calls waiting for one of the gateway's query slots; beyond, 503 at once. */
  SUBDATA_QUERY_QUEUE_MAX: env.positiveInt(1_024),
  /** Long-polling feed reads (GET /v1/events with wait) open at once in this gateway; beyond, 503. */
  SUBDATA_FEED_MAX_WAITING: env.positiveInt(1_000),
  /** Long-polling feed reads one API key may have open in this gateway; beyond, 429. */
  SUBDATA_FEED_MAX_WAITING_PER_KEY: env.positiveInt(4),
};

export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

/** Throws a ConfigError naming every bad variable (never their values). */
export function loadGatewayConfig(environment: NodeJS.ProcessEnv) {
  const config = loadConfig(gatewayConfigShape, environment);
  natsCredentials(config);
  return config;
}
