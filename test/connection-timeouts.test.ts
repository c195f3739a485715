import { serviceRoles } from "@subdata/db";
import { CONNECTION_LIVENESS, createPool } from "@subdata/runtime";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { startFaultProxy } from "./faults/fault-proxy.ts";
import { waitFor } from "./support/wait-for.ts";

/**
 * Every connection has a deadline and notices a dead peer: the service roles' own defaults (migration
 * role_timeouts, for any session of the role), and what every pool of ours sets on connect.
 */

const roleUrls = inject("roleDatabaseUrls");

interface Settings {
  statement_timeout: string;
  idle_in_transaction_session_timeout: string;
  tcp_keepalives_idle: string;
  tcp_user_timeout: string;
}

const SHOW_SETTINGS = `SELECT current_setting('statement_timeout') AS statement_timeout,
                              current_setting('idle_in_transaction_session_timeout') AS idle_in_transaction_session_timeout,
                              current_setting('tcp_keepalives_idle') AS tcp_keepalives_idle,
                              current_setting('tcp_user_timeout') AS tcp_user_timeout`;

describe("connection timeouts", () => {
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
  });

  it.each(Object.keys(serviceRoles) as Array<keyof typeof serviceRoles>)(
    "a plain session of the %s role has a statement timeout, an idle-in-transaction timeout and TCP keepalive with a user timeout",
    async (service) => {
      // No options at all: what psql or any other tool gets as this role.
      const client = new pg.Client({ connectionString: roleUrls[service] });
      await client.connect();
      try {
        const { rows } = await client.query<Settings>(SHOW_SETTINGS);
        const settings = rows[0]!;
        expect(settings.statement_timeout).toBe(service === "maintain" ? "15min" : "10s");
        expect(settings.idle_in_transaction_session_timeout).toBe("1min");
        // Over TCP (the suite connects to 127.0.0.1), so the socket settings are in force.
        expect(settings.tcp_keepalives_idle).toBe("10");
        expect(settings.tcp_user_timeout).toBe("20000");
      } finally {
        await client.end();
      }
    },
  );

  it("a pool's sessions carry its statement timeout and the liveness settings, whoever the role", async () => {
    const pool = createPool({ connectionString: inject("adminDatabaseUrl"), statementTimeoutMs: 1_234, applicationName: "timeouts-test" });
    pools.push(pool);
    const { rows } = await pool.query<Settings>(SHOW_SETTINGS);
    expect(rows[0]).toEqual({
      statement_timeout: "1234ms",
      idle_in_transaction_session_timeout: "1min",
      // current_setting gives these two in their base units (seconds, milliseconds).
      tcp_keepalives_idle: String(CONNECTION_LIVENESS.serverKeepAliveIdleSeconds),
      tcp_user_timeout: String(CONNECTION_LIVENESS.tcpUserTimeoutMs),
    });
    expect(pool.options).toMatchObject({ keepAlive: true, query_timeout: 1_234 + CONNECTION_LIVENESS.queryTimeoutMarginMs });
  });

  it("a session left idle inside a transaction is ended by Postgres, its locks freed", async () => {
    const pool = createPool({ connectionString: roleUrls.webhook, idleInTransactionTimeoutMs: 300, applicationName: "timeouts-idle-test" });
    pools.push(pool);
    const client = await pool.connect();
    const errors: unknown[] = [];
    client.on("error", (error) => errors.push(error));
    await client.query("BEGIN");
    const pid = (await client.query<{ pid: number }>("SELECT pg_advisory_xact_lock(918273), pg_backend_pid() AS pid")).rows[0]!.pid;
    const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
    await admin.connect();
    try {
      await waitFor("Postgres to end the idle transaction's session", async () => {
        const { rowCount } = await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid]);
        return rowCount === 0;
      });
      const lock = await admin.query<{ free: boolean }>("SELECT pg_try_advisory_lock(918273) AS free");
      expect(lock.rows[0]!.free).toBe(true);
      await admin.query("SELECT pg_advisory_unlock(918273)");
    } finally {
      await admin.end();
      client.release(true);
    }
    await waitFor("the client to hear of it", () => errors.length > 0);
    expect(String(errors[0])).toMatch(/idle-in-transaction|terminat/i);
  });

  it("a query on a connection whose peer went silent without a reset fails at the client-side deadline instead of hanging", async () => {
    const upstream = new URL(inject("adminDatabaseUrl"));
    const proxy = await startFaultProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
    try {
      const viaProxy = new URL(upstream);
      viaProxy.port = String(proxy.port);
      const pool = createPool({ connectionString: viaProxy.toString(), statementTimeoutMs: 100, max: 1, applicationName: "timeouts-blackhole-test" });
      pool.on("error", () => {});
      pools.push(pool);
      await pool.query("SELECT 1");
      await proxy.set({ kind: "blackhole" });
      // The server never sees the statement, so its statement_timeout cannot help; the client's deadline does.
      await expect(pool.query("SELECT 1")).rejects.toThrow(/timeout/i);
    } finally {
      await proxy.close();
    }
  });
});
