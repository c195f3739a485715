import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { createClient, type Client } from "@connectrpc/connect";
import { migrate, roleDatabaseUrl, serviceRoles, type ServiceName } from "@subdata/db";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createAllowedCallerTransport, createCallerTokens } from "@subdata/runtime/test-support";
import pg from "pg";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.ts";
import type { NatsRole } from "@subdata/events";
import { type AuthenticatedNats, createAuthenticatedNats } from "../support/authenticated-nats.ts";
import { freePort } from "../support/free-port.ts";
import { startPostgresCluster, type PostgresCluster } from "./postgres-cluster.ts";
import { createServiceProcess, type ServiceProcess } from "./service-process.ts";

/**
 * The whole stack as real processes on loopback, with infrastructure the suite owns: a private
 * Postgres cluster (restartable), a private nats-server (stoppable) with the production users and
 * permissions, each process logging in as its own user, and a fault proxy in front of
 * each service's Postgres connection and of NATS. Services reach their dependencies only through
 * the proxies; the suite's own admin connection goes straight to Postgres.
 */
export interface FaultStack {
  postgres: PostgresCluster;
  nats: AuthenticatedNats;
  /** What NATS clients connect to (the proxy in front of nats). */
  natsUrl: string;
  /** Per service: the proxy its DATABASE_URL points at. */
  pgProxies: Record<"query" | "auth" | "webhook" | "webhook2" | "relay", FaultProxy>;
  natsProxy: FaultProxy;
  /**
   * webhook2 is a second webhook replica (same database role, NATS user and durable consumer, its own
   * Postgres proxy); not started with the stack: the scenarios that need two replicas start and stop it.
   */
  services: Record<"query" | "auth" | "webhook" | "webhook2" | "relay" | "gateway", ServiceProcess>;
  gatewayUrl: string;
  admin: pg.Pool;
  apiKeys: Client<typeof ApiKeyService>;
  endpoints: Client<typeof WebhookEndpointService>;
  close(): Promise<void>;
}

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/** Fast retries so receiver scenarios settle in seconds; the shape (immediate, then growing) is the production one. */
const FAULT_RETRY_SCHEDULE = "0s,250ms,500ms,1s,2s,3s,4s,5s,5s,5s";

export async function startFaultStack(): Promise<FaultStack> {
  const ports = {
    postgres: await freePort(),
    nats: await freePort(),
    query: await freePort(),
    auth: await freePort(),
    webhook: await freePort(),
    webhook2: await freePort(),
    relayHealth: await freePort(),
    gateway: await freePort(),
  };
  const postgres = await startPostgresCluster(ports.postgres, "subdata_faults");
  const nats = await createAuthenticatedNats(
    { stream: "SUBDATA_EVENTS", subjectPrefix: "subdata.events", consumer: "webhook-deliveries" },
    { port: ports.nats },
  );
  const natsLogin = (role: NatsRole) => ({ NATS_USER: nats.credentials[role].user, NATS_PASSWORD: nats.credentials[role].pass });
  await nats.start();
  await migrate({ databaseUrl: postgres.adminUrl, log: () => {} });

  const admin = new pg.Pool({ connectionString: postgres.adminUrl, max: 6 });
  admin.on("error", () => {}); // idle clients die on the Postgres restart; the next query reconnects
  const passwords = {} as Record<ServiceName, string>;
  for (const [service, role] of Object.entries(serviceRoles) as Array<[ServiceName, string]>) {
    passwords[service] = randomBytes(18).toString("base64url");
    await admin.query(`ALTER ROLE ${pg.escapeIdentifier(role)} PASSWORD ${pg.escapeLiteral(passwords[service])}`);
  }

  const pgUpstream = { host: "127.0.0.1", port: ports.postgres };
  const pgProxies = {
    query: await startFaultProxy(pgUpstream),
    auth: await startFaultProxy(pgUpstream),
    webhook: await startFaultProxy(pgUpstream),
    webhook2: await startFaultProxy(pgUpstream),
    relay: await startFaultProxy(pgUpstream),
  };
  const natsProxy = await startFaultProxy({ host: "127.0.0.1", port: ports.nats });
  const natsUrl = `nats://${natsProxy.address}`;
  const viaProxy = (proxy: FaultProxy, service: ServiceName) => {
    const url = new URL(roleDatabaseUrl(postgres.adminUrl, serviceRoles[service], passwords[service]));
    url.port = String(proxy.port);
    return url.toString();
  };

  // Every process gets every caller's token and hash; the access table still decides per RPC.
  const callers = createCallerTokens();
  const urls = {
    query: `http://127.0.0.1:${ports.query}`,
    auth: `http://127.0.0.1:${ports.auth}`,
    webhook: `http://127.0.0.1:${ports.webhook}`,
    gateway: `http://127.0.0.1:${ports.gateway}`,
  };
  const common = {
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? "warn",
    METRICS_PORT: "0",
    ...callers.environment,
    SUBDATA_PAGE_TOKEN_SECRET: randomBytes(24).toString("base64url"),
    NATS_URL: natsUrl,
  };
  const webhookSecrets = {
    SUBDATA_WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
    SUBDATA_WEBHOOK_ALLOW_PRIVATE: "true",
    SUBDATA_WEBHOOK_RETRY_SCHEDULE: FAULT_RETRY_SCHEDULE,
  };
  const grpc = (url: string) => ({ kind: "grpc" as const, url, token: callers.tokens.app });
  const services = {
    query: createServiceProcess(
      {
        name: "query",
        entry: "services/query/src/main.ts",
        env: { ...common, PORT: String(ports.query), DATABASE_URL: viaProxy(pgProxies.query, "query") },
        readiness: grpc(urls.query),
      },
      repoRoot,
    ),
    auth: createServiceProcess(
      {
        name: "auth",
        entry: "services/auth/src/main.ts",
        env: { ...common, ...natsLogin("auth"), PORT: String(ports.auth), DATABASE_URL: viaProxy(pgProxies.auth, "auth") },
        readiness: grpc(urls.auth),
      },
      repoRoot,
    ),
    webhook: createServiceProcess(
      {
        name: "webhook",
        entry: "services/webhook/src/main.ts",
        env: { ...common, ...webhookSecrets, ...natsLogin("webhook"), PORT: String(ports.webhook), DATABASE_URL: viaProxy(pgProxies.webhook, "webhook") },
        readiness: grpc(urls.webhook),
      },
      repoRoot,
    ),
    webhook2: createServiceProcess(
      {
        name: "webhook2",
        entry: "services/webhook/src/main.ts",
        env: {
          ...common,
          ...webhookSecrets,
          ...natsLogin("webhook"),
          PORT: String(ports.webhook2),
          DATABASE_URL: viaProxy(pgProxies.webhook2, "webhook"),
        },
        readiness: grpc(`http://127.0.0.1:${ports.webhook2}`),
      },
      repoRoot,
    ),
    relay: createServiceProcess(
      {
        name: "relay",
        entry: "services/relay/src/main.ts",
        env: {
          ...common,
          ...natsLogin("relay"),
          SUBDATA_RELAY_HEALTH_PORT: String(ports.relayHealth),
          DATABASE_URL: viaProxy(pgProxies.relay, "webhook"),
        },
        readiness: { kind: "http", url: `http://127.0.0.1:${ports.relayHealth}/readyz` },
      },
      repoRoot,
    ),
    gateway: createServiceProcess(
      {
        name: "gateway",
        entry: "gateway/src/main.ts",
        env: {
          ...common,
          ...natsLogin("gateway"),
          PORT: String(ports.gateway),
          SUBDATA_QUERY_URL: urls.query,
          SUBDATA_AUTH_URL: urls.auth,
          SUBDATA_SHUTDOWN_DELAY_MS: "0",
          // The suite measures loss, not the rate limiter.
          SUBDATA_RATE_LIMIT_QUOTA: "100000",
        },
        readiness: { kind: "http", url: `${urls.gateway}/api/v1/openapi.json` },
      },
      repoRoot,
    ),
  };
  await Promise.all(Object.values(services).flatMap((service) => (service === services.webhook2 ? [] : [service.start()])));

  const authTransport = createAllowedCallerTransport({ baseUrl: urls.auth, tokens: callers.tokens });
  const webhookTransport = createAllowedCallerTransport({ baseUrl: urls.webhook, tokens: callers.tokens });
  return {
    postgres,
    nats,
    natsUrl,
    pgProxies,
    natsProxy,
    services,
    gatewayUrl: urls.gateway,
    admin,
    apiKeys: createClient(ApiKeyService, authTransport.transport),
    endpoints: createClient(WebhookEndpointService, webhookTransport.transport),
    async close() {
      authTransport.close();
      webhookTransport.close();
      await Promise.allSettled(Object.values(services).map((service) => service.kill("SIGTERM")));
      await Promise.allSettled([...Object.values(pgProxies), natsProxy].map((proxy) => proxy.close()));
      await admin.end().catch(() => {});
      await nats.dispose();
      await postgres.stop();
    },
  };
}
