import { randomBytes } from "node:crypto";
import { type Client, createClient } from "@connectrpc/connect";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createLogger, createPool, type Pool } from "@subdata/runtime";
import { type CallerTokens, createAllowedCallerTransport, createCallerTokens } from "@subdata/runtime/test-support";
import { createSecretBox, createWebhookServer, type SecretBox } from "@subdata/webhook";
import pg from "pg";
import { inject } from "vitest";
import { createFixtures, type Fixtures } from "../support/fixtures.ts";

export interface RunningWebhookServer {
  /** h2c base URL, e.g. "http://127.0.0.1:40123". */
  baseUrl: string;
  /** Each caller's token (the server accepts them all; the access table decides per RPC). */
  tokens: CallerTokens["tokens"];
  /** The SUBDATA_WEBHOOK_SECRET_KEY the server seals with (base64). */
  secretKey: string;
  secretBox: SecretBox;
  pageTokenSecret: string;
  endpoints: Client<typeof WebhookEndpointService>;
  deliveries: Client<typeof WebhookDeliveryService>;
  /** How many times the server woke the (absent) pipeline. */
  wakeCount(): number;
  stop(): Promise<void>;
}

export interface StartOptions {
  allowPrivate?: boolean;
}

/**
 * The real webhook RPC server in-process on port 0, connected as the subdata_webhook role of this run's
 * database, with fresh random secrets, plus Connect clients that send the service credential. No
 * delivery pipeline runs: these tests look at the rows the RPCs schedule.
 */
export async function startWebhookServer(options: StartOptions = {}): Promise<RunningWebhookServer> {
  const callers = createCallerTokens();
  const secretKey = randomBytes(32).toString("base64");
  const pageTokenSecret = randomBytes(32).toString("hex");
  const secretBox = createSecretBox(secretKey);
  const pool: Pool = createPool({ connectionString: inject("roleDatabaseUrls").webhook, applicationName: "subdata-webhook-test" });
  let wakes = 0;
  const server = createWebhookServer({
    pool,
    callers: callers.credentials,
    pageTokenSecret,
    secretBox,
    allowPrivate: options.allowPrivate ?? false,
    logger: createLogger({ name: "webhook", level: "silent" }),
    pipeline: { wake: () => void wakes++ },
  });
  const address = await server.listen("127.0.0.1", 0);
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const connection = createAllowedCallerTransport({ baseUrl, tokens: callers.tokens });
  return {
    baseUrl,
    tokens: callers.tokens,
    secretKey,
    secretBox,
    pageTokenSecret,
    endpoints: createClient(WebhookEndpointService, connection.transport),
    deliveries: createClient(WebhookDeliveryService, connection.transport),
    wakeCount: () => wakes,
    async stop() {
      connection.close();
      await server.close();
      await pool.end();
    },
  };
}

/** The superuser pool of this run's database, for fixtures and for looking at rows directly. */
export function adminPool(): pg.Pool {
  return new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2, options: "-c TimeZone=UTC" });
}

export interface WebhookEventOptions {
  merchantId: string;
  subscriptionId?: string;
  type?: "subscription.created" | "subscription.updated" | "subscription.deleted";
  version?: number;
  /** timestamptz text with an offset. */
  occurredAt: string;
}

/** Inserts a consumed event as the pipeline would store it; returns its id. */
export async function insertWebhookEvent(db: Pick<pg.Pool, "query">, options: WebhookEventOptions): Promise<string> {
  const id = `evt_${randomBytes(16).toString("hex")}`;
  const subscriptionId = options.subscriptionId ?? `sub_${randomBytes(16).toString("hex")}`;
  const type = options.type ?? "subscription.updated";
  const body = JSON.stringify({ id, type, timestamp: options.occurredAt, data: { object: { id: subscriptionId }, previous_attributes: {} } });
  await db.query(
    `INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body)
     VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7)`,
    [id, options.merchantId, subscriptionId, type, options.version ?? 1, options.occurredAt, body],
  );
  return id;
}

export function fixturesOf(db: pg.Pool): Fixtures {
  return createFixtures(db);
}
