import { createClient } from "@connectrpc/connect";
import {
  createApiKeyCache,
  createGateway,
  createRevocationListener,
  createThrottledAuthentications,
  loadGatewayConfig,
  type ApiKeyCache,
  type Gateway,
  type ThrottledAuthentications,
} from "@subdata/gateway";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { createMetrics, createServiceTransport, type Registry } from "@subdata/runtime";
import type { LightMyRequestResponse } from "fastify";
import pg from "pg";
import { inject } from "vitest";
import { startAuthService, type AuthHarness } from "../auth/auth-harness.ts";
import { createFixtures, type Fixtures } from "../support/fixtures.ts";
import { startQueryServer, type RunningQueryServer } from "../support/query-server.ts";
import { createCapturedLogger } from "@subdata/runtime/test-support";

/**
 * The whole read path in-process: real query and auth services on port 0 (their own roles on this
 * run's database), real NATS for revocations, and the gateway over them, driven with Fastify inject.
 * Audit writes can be made to fail on demand (`failAudit`) at the database, below the auth service.
 */
export interface GatewayHarness {
  gateway: Gateway;
  cache: ApiKeyCache;
  auth: AuthHarness;
  query: RunningQueryServer;
  admin: pg.Pool;
  fixtures: Fixtures;
  /** Every log line the gateway wrote. */
  logs: string[];
  /** The gateway's metrics (no process metrics). */
  metrics: Registry;
  /** The counts of throttled authentication attempts; nothing flushes them but a test. */
  throttled: ThrottledAuthentications;
  /** When true, every INSERT into audit_events fails as if the database were gone. */
  failAudit: { enabled: boolean };
  /** A new key for a merchant, as CreateApiKey returns it (the only copy). */
  createKey(merchantId: string): Promise<{ key: string; apiKeyId: string }>;
  /** GET/HEAD with a bearer key. */
  request(
    key: string | undefined,
    url: string,
    options?: { method?: "GET" | "HEAD" | "DELETE"; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  /** Resolves once the revocation listener trusts the cache (its NATS subscription is live). */
  cacheLive(): Promise<void>;
  close(): Promise<void>;
}

export async function pollUntil(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function startGatewayHarness(environment: NodeJS.ProcessEnv = {}): Promise<GatewayHarness> {
  const failAudit = { enabled: false };
  const auth = await startAuthService({
    wrapDb: (db) => ({
      query: ((...args: unknown[]) => {
        const first = args[0];
        const text = typeof first === "string" ? first : String((first as { text?: string }).text);
        if (failAudit.enabled && text.includes("INSERT INTO audit_events")) {
          return Promise.reject(Object.assign(new Error("Connection terminated unexpectedly"), { code: "08006" }));
        }
        return (db.query as (...a: unknown[]) => unknown)(...args);
      }) as typeof db.query,
    }),
  });
  const query = await startQueryServer();
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 4 });
  const { logger, lines: logs } = createCapturedLogger({ name: "gateway", level: "debug" });
  const metrics = createMetrics({ service: "gateway", defaultMetrics: false });
  // The gateway's own credential: each harness made its own set of caller tokens.
  const queryTransport = createServiceTransport({ baseUrl: query.baseUrl, serviceToken: query.tokens.gateway });
  const waitingQueryTransport = createServiceTransport({ baseUrl: query.baseUrl, serviceToken: query.tokens.gateway });
  const authTransport = createServiceTransport({ baseUrl: auth.baseUrl, serviceToken: auth.tokens.gateway });
  // Suites send many requests (and bad keys) from one address; the limits have suites of their own.
  const config = loadGatewayConfig({
    SUBDATA_GATEWAY_TOKEN: auth.tokens.gateway,
    SUBDATA_RATE_LIMIT_QUOTA: "10000",
    SUBDATA_AUTH_FAILURE_QUOTA: "10000",
    ...environment,
  });
  const cache = createApiKeyCache({ ttlMs: 60_000, maxEntries: 1_000, now: Date.now });
  const revocations = createRevocationListener({ natsUrl: inject("natsUrl"), cache, logger, retryDelayMs: 200 });
  revocations.start();
  const throttled = createThrottledAuthentications({
    apiKeys: createClient(ApiKeyService, authTransport.transport),
    windowSeconds: config.SUBDATA_AUTH_FAILURE_WINDOW_SECONDS,
    maxAddresses: config.SUBDATA_AUTH_FAILURE_MAX_CLIENTS,
    timeoutMs: config.SUBDATA_UPSTREAM_TIMEOUT_MS,
    logger,
  });
  const gateway = createGateway({
    clients: {
      subscriptions: createClient(SubscriptionService, queryTransport.transport),
      orders: createClient(OrderService, queryTransport.transport),
      events: createClient(EventService, queryTransport.transport),
      waitingEvents: createClient(EventService, waitingQueryTransport.transport),
      apiKeys: createClient(ApiKeyService, authTransport.transport),
      audit: createClient(AuditService, authTransport.transport),
    },
    logger,
    config,
    apiKeyCache: cache,
    metrics,
    throttledAuthentications: throttled,
  });
  await gateway.ready();

  return {
    gateway,
    cache,
    auth,
    query,
    admin,
    fixtures: createFixtures(admin),
    logs,
    metrics,
    throttled,
    failAudit,
    async createKey(merchantId) {
      const created = await auth.apiKeys.createApiKey({ merchantId, name: "gateway test" });
      return { key: created.key, apiKeyId: created.apiKey!.id };
    },
    request(key, url, options = {}) {
      return gateway.inject({
        method: options.method ?? "GET",
        url: `/api/v1${url}`,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...options.headers },
      });
    },
    async cacheLive() {
      await pollUntil(() => cache.trusted, "the revocation subscription");
    },
    async close() {
      await gateway.close();
      await revocations.close();
      queryTransport.close();
      waitingQueryTransport.close();
      authTransport.close();
      await query.stop();
      await auth.close();
      await admin.end();
    },
  };
}
