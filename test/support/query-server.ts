import { randomBytes } from "node:crypto";
import { type Client, createClient } from "@connectrpc/connect";
import { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { createCommitWatchPool } from "@subdata/events";
import { createChangeNotifier, createQueryPool, createQueryServer } from "@subdata/query";
import { createLogger, type Pool } from "@subdata/runtime";
import { type CallerTokens, createAllowedCallerTransport, createCallerTokens } from "@subdata/runtime/test-support";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { createFixtures, type Fixtures } from "./fixtures.ts";

export interface RunningQueryServer {
  /** h2c base URL, e.g. "http://127.0.0.1:40123". */
  baseUrl: string;
  /** Each caller's token (the server accepts them all; the access table decides per RPC). */
  tokens: CallerTokens["tokens"];
  /** The service's own pool (subdata_query role, read-only). */
  pool: Pool;
  subscriptions: Client<typeof SubscriptionService>;
  orders: Client<typeof OrderService>;
  events: Client<typeof EventService>;
  stop(): Promise<void>;
}

export interface StartQueryServerOptions {
  /** DATABASE_STATEMENT_TIMEOUT_MS for the service's pool (default 5000, as in production). */
  statementTimeoutMs?: number;
  /** SUBDATA_FEED_MAX_WAITERS (default 100 here). */
  maxWaiters?: number;
  /** The subdata_query role's connection string (default: this run's shared database). */
  databaseUrl?: string;
}

/**
 * Starts the real query service in-process on port 0, connected as the subdata_query role of this
 * run's database, with fresh random secrets, plus Connect clients that send the service credential.
 */
export async function startQueryServer(options: StartQueryServerOptions = {}): Promise<RunningQueryServer> {
  const callers = createCallerTokens();
  const databaseUrl = options.databaseUrl ?? inject("roleDatabaseUrls").query;
  const pool = createQueryPool({
    connectionString: databaseUrl,
    statementTimeoutMs: options.statementTimeoutMs ?? 5_000,
    applicationName: "subdata-query-test",
  });
  const logger = createLogger({ name: "query", level: "silent" });
  const watchPool = createCommitWatchPool({ connectionString: databaseUrl, applicationName: "subdata-query-changes", logger });
  const changes = createChangeNotifier({ db: watchPool, logger, maxWaiters: options.maxWaiters ?? 100, pollIntervalMs: 10 });
  const server = createQueryServer({
    pool,
    changes,
    callers: callers.credentials,
    pageTokenSecret: randomBytes(32).toString("hex"),
    logger,
  });
  const address = await server.listen("127.0.0.1", 0);
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const connection = createAllowedCallerTransport({ baseUrl, tokens: callers.tokens });
  return {
    baseUrl,
    tokens: callers.tokens,
    pool,
    subscriptions: createClient(SubscriptionService, connection.transport),
    orders: createClient(OrderService, connection.transport),
    events: createClient(EventService, connection.transport),
    async stop() {
      connection.close();
      await changes.close();
      await watchPool.end();
      await server.close();
      await pool.end();
    },
  };
}

/** What a query-service test file works with; filled in by the file's beforeAll. */
export interface QueryTestHarness {
  /** Superuser pool on this run's database, for fixtures and assertions. */
  readonly admin: pg.Pool;
  readonly fixtures: Fixtures;
  readonly query: RunningQueryServer;
}

/**
 * Registers the beforeAll/afterAll every query-service test file needs: an admin pool with fixtures and
 * the real query server; everything is closed after the file.
 */
export function useQueryHarness(): QueryTestHarness {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  const harness = { admin, fixtures: createFixtures(admin) } as { admin: pg.Pool; fixtures: Fixtures; query: RunningQueryServer };
  beforeAll(async () => {
    harness.query = await startQueryServer();
  });
  afterAll(async () => {
    await harness.query?.stop();
    await admin.end();
  });
  return harness;
}
