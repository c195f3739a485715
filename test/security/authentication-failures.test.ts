import { createSecurityEventRepository } from "../../services/auth/src/security-event-repository.ts";
import { createSecurityEventRetention } from "../../services/auth/src/security-event-retention.ts";
import { createLogger } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../gateway/gateway-harness.ts";

/**
 * OWASP API2/API4 for failed authentications: a per-address budget at the gateway (checked before the
 * auth RPC), every failure in the security log (a missing header included), and the log's retention.
 * Real gateway, auth service, Postgres and NATS; client addresses are set per request.
 */

// Documentation ranges (RFC 5737 / 3849): one address per scenario, so scenarios cannot share a bucket.
const ATTACKER = "203.0.113.10";
const BYSTANDER = "198.51.100.20";
const INTEGRATOR = "192.0.2.30";
const PROBER = "203.0.113.40";
const PROBER_V6 = "2001:db8:40:1::1";

interface SecurityRow {
  reason: string;
  key_prefix: string | null;
  client_ip: string;
  user_agent: string;
  request_id: string;
}

describe("failed authentications at the gateway", () => {
  let h: GatewayHarness;
  let merchantId = "";

  beforeAll(async () => {
    h = await startGatewayHarness({ SUBDATA_AUTH_FAILURE_QUOTA: "3", SUBDATA_AUTH_FAILURE_WINDOW_SECONDS: "3600" });
    await h.cacheLive();
    merchantId = await h.fixtures.merchant();
    await h.fixtures.subscription({ merchantId });
  });

  afterAll(async () => {
    await h?.close();
  });

  function get(ip: string, key: string | undefined, userAgent = "attack-test/1") {
    return h.gateway.inject({
      method: "GET",
      url: "/api/v1/subscriptions?limit=1",
      headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), "user-agent": userAgent },
      remoteAddress: ip,
    });
  }

  async function securityEventsFrom(ip: string): Promise<SecurityRow[]> {
    const { rows } = await h.admin.query<SecurityRow>(
      "SELECT reason, key_prefix, client_ip, user_agent, request_id FROM security_events WHERE client_ip = $1 ORDER BY occurred_at, id",
      [ip],
    );
    return rows;
  }

  it("after the quota of bad keys from one address: 429 with no auth call and no security event; other addresses and valid keys still pass", async () => {
    const { key } = await h.createKey(merchantId);
    // The integrator's key authenticated from the attacker's address before (a shared NAT).
    expect((await get(ATTACKER, key)).statusCode).toBe(200);
    const wrong = `${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`;

    const refused = [];
    for (let index = 0; index < 3; index++) refused.push(await get(ATTACKER, wrong));
    expect(refused.map((response) => response.statusCode)).toEqual([401, 401, 401]);
    expect(refused.map((response) => response.headers.ratelimit)).toEqual([
      '"auth_failures";r=2;t=1200',
      '"auth_failures";r=1;t=2400',
      '"auth_failures";r=0;t=3600',
    ]);
    // Statements the auth service sends for authentications (key lookups, security events).
    const authStatements = () => h.auth.statements.filter((sql) => /FROM api_keys|INSERT INTO security_events/.test(sql)).length;
    const authStatementsBefore = authStatements();

    const limited = await get(ATTACKER, wrong);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
    expect(limited.json()).toMatchObject({
      type: "https://subdata.dev/problems/rate_limited",
      status: 429,
      code: "rate_limited",
      instance: "/api/v1/subscriptions",
      request_id: limited.headers["request-id"],
    });
    expect(limited.headers["retry-after"]).toBe("1200");
    expect(limited.headers["ratelimit-policy"]).toBe('"auth_failures";q=3;w=3600');
    expect(limited.headers.ratelimit).toBe('"auth_failures";r=0;t=3600');
    // A missing header from the throttled address is refused the same way.
    expect((await get(ATTACKER, undefined)).statusCode).toBe(429);
    // Nothing reached the auth service's database: no lookup, no security event.
    expect(authStatements()).toBe(authStatementsBefore);
    const logged = await securityEventsFrom(ATTACKER);
    expect(logged.map((row) => row.reason)).toEqual(["bad_checksum", "bad_checksum", "bad_checksum"]);
    expect(logged.map((row) => row.request_id)).toEqual(refused.map((response) => response.headers["request-id"]));

    // Another address still gets its own verdicts.
    const bystander = await get(BYSTANDER, wrong);
    expect(bystander.statusCode).toBe(401);
    expect(bystander.json().code).toBe("invalid_api_key");
    // The valid key passes from elsewhere and, having authenticated before, from the throttled address
    // too, even when the gateway has to ask the auth service again (cache emptied).
    expect((await get(INTEGRATOR, key)).statusCode).toBe(200);
    h.cache.clear();
    const fromAttacker = await get(ATTACKER, key);
    expect(fromAttacker.statusCode).toBe(200);
    expect(fromAttacker.headers["ratelimit-policy"]).toMatch(/^"default";/);
  });

  it("a missing Authorization header lands in the security log, and counts against the same budget", async () => {
    const responses = [];
    for (let index = 0; index < 3; index++) responses.push(await get(PROBER, undefined, `probe/${index}`));
    expect(responses.map((response) => response.statusCode)).toEqual([401, 401, 401]);
    for (const response of responses) {
      expect(response.json().code).toBe("missing_api_key");
      expect(response.headers["www-authenticate"]).toBe('Bearer realm="subdata"');
    }
    // Written before the 401 left: the gateway awaits the auth service, which awaits the commit.
    const logged = await securityEventsFrom(PROBER);
    expect(logged).toEqual(
      responses.map((response, index) => ({
        reason: "missing",
        key_prefix: null,
        client_ip: PROBER,
        user_agent: `probe/${index}`,
        request_id: response.headers["request-id"],
      })),
    );
    const limited = await get(PROBER, undefined);
    expect(limited.statusCode).toBe(429);
    expect(await securityEventsFrom(PROBER)).toHaveLength(3);
  });

  it("an IPv6 client cannot hop within its /64 to get a fresh budget", async () => {
    for (let index = 1; index <= 3; index++) expect((await get(`2001:db8:40:1::${index}`, undefined)).statusCode).toBe(401);
    expect((await get("2001:db8:40:1:ffff::9", undefined)).statusCode).toBe(429);
    expect((await get("2001:db8:40:2::1", undefined)).statusCode).toBe(401);
    expect(await securityEventsFrom(PROBER_V6)).toHaveLength(1);
  });
});

describe("security log retention", () => {
  let admin: pg.Pool;
  let asAuth: pg.Pool;
  const marker = `retention-${Date.now()}`;

  beforeAll(() => {
    admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
    asAuth = new pg.Pool({ connectionString: inject("roleDatabaseUrls").auth, max: 2 });
  });

  afterAll(async () => {
    await asAuth?.end();
    await admin?.end();
  });

  /** Rows aged as given (days), tagged by user agent so parallel suites' rows are told apart. */
  async function insertAged(ages: number[]): Promise<void> {
    await admin.query(
      `INSERT INTO security_events (occurred_at, reason, client_ip, user_agent, request_id)
       SELECT now() - make_interval(days => age), 'unknown', '192.0.2.99', $1, 'req_' || age
         FROM unnest($2::int[]) AS age`,
      [marker, ages],
    );
  }

  async function remainingAges(): Promise<number[]> {
    const { rows } = await admin.query<{ age: number }>(
      "SELECT round(extract(epoch FROM now() - occurred_at) / 86400)::int AS age FROM security_events WHERE user_agent = $1 ORDER BY age",
      [marker],
    );
    return rows.map((row) => row.age);
  }

  it("deletes only rows older than the retention, in bounded batches, as the auth role", async () => {
    await insertAged([0, 1, 89, 91, 92, 120, 365, 400, 1000]);
    const logs: string[] = [];
    const logger = createLogger({ name: "retention-test", level: "info", destination: { write: (line: string) => void logs.push(line) } });
    const retention = createSecurityEventRetention({
      repository: createSecurityEventRepository(asAuth),
      logger,
      retentionDays: 90,
      batchSize: 2,
    });
    // Six old rows of ours (other suites may add only recent ones): three batches of two, then an empty one.
    expect(await retention.runOnce()).toBe(6);
    expect(await remainingAges()).toEqual([0, 1, 89]);
    expect(logs.some((line) => line.includes("purged old security events"))).toBe(true);
    expect(await retention.runOnce()).toBe(0);
  });

  it("stops after the run's batch budget; the next run goes on", async () => {
    await insertAged([200, 201, 202, 203, 204]);
    const logger = createLogger({ name: "retention-test", level: "silent" });
    const retention = createSecurityEventRetention({
      repository: createSecurityEventRepository(asAuth),
      logger,
      retentionDays: 90,
      batchSize: 2,
      maxBatchesPerRun: 1,
    });
    expect(await retention.runOnce()).toBe(2);
    // Oldest first.
    expect(await remainingAges()).toEqual([0, 1, 89, 200, 201, 202]);
    expect(await retention.runOnce()).toBe(2);
    expect(await retention.runOnce()).toBe(1);
    expect(await remainingAges()).toEqual([0, 1, 89]);
  });

  it("the auth role can neither DELETE security events itself nor purge recent ones; audit_events stays append-only", async () => {
    await expect(asAuth.query("DELETE FROM security_events WHERE user_agent = $1", [marker])).rejects.toThrow(/permission denied/);
    await expect(asAuth.query("SELECT subdata_purge_security_events(interval '23 hours', 100)")).rejects.toThrow(/at least 1 day/);
    await expect(asAuth.query("SELECT subdata_purge_security_events(interval '0 days', 100)")).rejects.toThrow(/at least 1 day/);
    await expect(asAuth.query("DELETE FROM audit_events WHERE false")).rejects.toThrow(/permission denied/);
    expect(await remainingAges()).toEqual([0, 1, 89]);
  });
});
