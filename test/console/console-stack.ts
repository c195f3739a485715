import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createServiceTransport } from "@subdata/runtime";
import { createCallerTokens } from "@subdata/runtime/test-support";
import pg from "pg";
import { inject } from "vitest";
import { freePort } from "../support/free-port.ts";
import { listeningPorts, type RunningProcess, startProcess } from "../lifecycle/support/process.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { waitFor } from "../support/wait-for.ts";

/**
 * The whole stack as real processes on loopback, on a database of its own and a JetStream stream of its
 * own: query, auth, webhook (with its delivery pipeline), relay, gateway, and the console service, each
 * started as production starts it. What a browser test of the console needs, and nothing faked.
 */
export interface ConsoleStack {
  database: TestDatabase;
  admin: pg.Pool;
  gatewayUrl: string;
  /** SUBDATA_CONSOLE_PUBLIC_URL: "http://127.0.0.1:<port>/console". */
  consoleUrl: string;
  portalSessions: Client<typeof PortalSessionService>;
  endpoints: Client<typeof WebhookEndpointService>;
  deliveries: Client<typeof WebhookDeliveryService>;
  processes: RunningProcess[];
  /** The running process of that name ("webhook", "auth", …). */
  process(name: string): RunningProcess;
  close(): Promise<void>;
}

export async function startConsoleStack(): Promise<ConsoleStack> {
  const runId = inject("runId");
  const stream = `${runId}_console`;
  const database = await createTestDatabase("console");
  const admin = new pg.Pool({ connectionString: database.adminUrl, max: 3 });
  // Every process gets every caller's token and hash; the access table still decides per RPC.
  const callers = createCallerTokens();
  const processes: RunningProcess[] = [];
  const common = {
    ...callers.environment,
    SUBDATA_PAGE_TOKEN_SECRET: randomBytes(24).toString("hex"),
    NATS_URL: inject("natsUrl"),
    SUBDATA_EVENTS_STREAM: stream,
    SUBDATA_EVENTS_SUBJECT_PREFIX: `${runId}.console`,
    SUBDATA_WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
    SUBDATA_WEBHOOK_ALLOW_PRIVATE: "true",
  };
  const start = (name: string, entry: string, env: Record<string, string>) => {
    const proc = startProcess(name, entry, { ...common, ...env });
    processes.push(proc);
    return proc;
  };
  const close = async () => {
    for (const proc of processes) proc.kill();
    await Promise.all(processes.map((proc) => proc.exited));
    const nc = await connect({ servers: inject("natsUrl") });
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => {});
    await nc.close();
    await admin.end();
    await database.drop();
  };
  try {
    const query = start("query", "services/query/src/main.ts", { DATABASE_URL: database.roleUrls.query });
    const auth = start("auth", "services/auth/src/main.ts", { DATABASE_URL: database.roleUrls.auth });
    const webhook = start("webhook", "services/webhook/src/main.ts", { DATABASE_URL: database.roleUrls.webhook });
    const relay = start("relay", "services/relay/src/main.ts", { DATABASE_URL: database.roleUrls.webhook, SUBDATA_RELAY_HEALTH_PORT: "0" });
    const [queryPorts, authPorts, webhookPorts] = await Promise.all([listeningPorts(query), listeningPorts(auth), listeningPorts(webhook)]);
    const relayPort = Number((await relay.waitForLine((line) => line.msg === "relay health endpoint listening", "relay health port")).port);
    await waitFor("the relay to be ready", async () => (await fetch(`http://127.0.0.1:${relayPort}/readyz`)).status === 200);
    await webhook.waitForLine((line) => line.msg === "delivery pipeline started", "the delivery pipeline");
    const authUrl = `http://127.0.0.1:${authPorts.port}`;
    const webhookUrl = `http://127.0.0.1:${webhookPorts.port}`;
    const gateway = start("gateway", "gateway/src/main.ts", {
      SUBDATA_QUERY_URL: `http://127.0.0.1:${queryPorts.port}`,
      SUBDATA_AUTH_URL: authUrl,
      SUBDATA_SHUTDOWN_DELAY_MS: "0",
    });
    const webPort = await freePort();
    const consoleUrl = `http://127.0.0.1:${webPort}/console`;
    const consoleProcess = start("console", "services/console/src/main.ts", {
      DATABASE_URL: database.roleUrls.console,
      SUBDATA_AUTH_URL: authUrl,
      SUBDATA_WEBHOOK_URL: webhookUrl,
      SUBDATA_CONSOLE_WEB_PORT: String(webPort),
      SUBDATA_CONSOLE_PUBLIC_URL: consoleUrl,
    });
    const gatewayLine = await gateway.waitForLine((line) => line.msg === "gateway listening", "gateway listening");
    const gatewayUrl = `http://127.0.0.1:${new URL(String(gatewayLine.address)).port}`;
    const consolePorts = await listeningPorts(consoleProcess);
    const consoleTransport = createServiceTransport({ baseUrl: `http://127.0.0.1:${consolePorts.port}`, serviceToken: callers.tokens.app });
    const webhookTransport = createServiceTransport({ baseUrl: webhookUrl, serviceToken: callers.tokens.app });
    return {
      database,
      admin,
      gatewayUrl,
      consoleUrl,
      portalSessions: createClient(PortalSessionService, consoleTransport.transport),
      endpoints: createClient(WebhookEndpointService, webhookTransport.transport),
      deliveries: createClient(WebhookDeliveryService, webhookTransport.transport),
      processes,
      process(name) {
        const found = processes.find((proc) => proc.name === name);
        if (!found) throw new Error(`no process named ${name}`);
        return found;
      },
      async close() {
        consoleTransport.close();
        webhookTransport.close();
        await close();
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}
