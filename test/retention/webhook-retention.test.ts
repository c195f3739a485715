import { createPool } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadMaintainSettings } from "../../services/cli/src/maintain/maintain-settings.ts";
import { createMaintenanceRepository } from "../../services/cli/src/maintain/maintenance-repository.ts";
import { runMaintenance } from "../../services/cli/src/maintain/run-maintenance.ts";
import { json, runCli } from "../cli/run-cli.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";

// The webhook tables keep what the policy says and no more: finished deliveries and attempts for
// SUBDATA_WEBHOOK_DELIVERY_RETENTION_DAYS, events at least as long as the change feed and while a
// delivery refers to them; nothing pending, nothing younger than the floors.

let database: TestDatabase;
let admin: pg.Pool;
let asMaintain: pg.Pool;
let sequence = 0;

beforeAll(async () => {
  database = await createTestDatabase("webhook_retention");
  admin = new pg.Pool({ connectionString: database.adminUrl, max: 2, options: "-c TimeZone=UTC" });
  asMaintain = new pg.Pool({ connectionString: database.roleUrls.maintain, max: 1 });
  await admin.query("INSERT INTO merchants (id, name) VALUES ('mer_wr', 'Retention')");
});

afterAll(async () => {
  await asMaintain?.end();
  await admin?.end();
  await database?.drop();
});

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

async function event(receivedDaysAgo: number): Promise<string> {
  const id = `evt_wr${++sequence}`;
  await admin.query(
    `INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body, received_at)
     VALUES ($1, 'mer_wr', 'sub_wr', 'subscription.updated', $2, $3, '{}', $3)`,
    [id, sequence, daysAgo(receivedDaysAgo)],
  );
  return id;
}

async function delivery(eventId: string, createdDaysAgo: number, status: string, attemptDaysAgo: number[] = []): Promise<string> {
  const id = `whd_wr${++sequence}`;
  // An endpoint each: a delivery is unique per (endpoint, event).
  await admin.query("INSERT INTO webhook_endpoints (id, merchant_id, url, secret_ciphertext) VALUES ($1, 'mer_wr', 'https://example.com/hook', '\\x00')", [
    `we_${id}`,
  ]);
  await admin.query(
    `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, resource_id, version, status, created_at, attempt_count)
     VALUES ($1, 'mer_wr', $2, $3, 'sub_wr', $4, $5, $6, $7)`,
    [id, `we_${id}`, eventId, sequence, status, daysAgo(createdDaysAgo), attemptDaysAgo.length],
  );
  for (const [index, days] of attemptDaysAgo.entries()) {
    await admin.query(
      `INSERT INTO webhook_attempts (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class)
       VALUES ($1, 'mer_wr', $2, $3, 1000, 500, 'http_status')`,
      [id, index + 1, daysAgo(days)],
    );
  }
  return id;
}

const ids = async (table: string) => (await admin.query<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((row) => row.id);
const attemptsOf = async (deliveryId: string) =>
  (await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = $1", [deliveryId])).rows[0]!.n;

describe("webhook retention", () => {
  it("removes finished deliveries past retention with their attempts, old attempts of kept deliveries, and events nothing refers to past theirs", async () => {
    const oldEvent = await event(500);
    const oldFinished = await delivery(oldEvent, 120, "SUCCEEDED", [120, 119]);
    const oldFailed = await delivery(oldEvent, 100, "FAILED", [100]);
    const referencedEvent = await event(450);
    const oldPending = await delivery(referencedEvent, 95, "PENDING", [95, 2]);
    const recentEvent = await event(10);
    const recent = await delivery(recentEvent, 10, "SUCCEEDED", [10]);
    const unreferencedOld = await event(401);
    const unreferencedYoung = await event(399);

    const run = await runCli(["maintain", "--json"], { env: { DATABASE_URL: database.roleUrls.maintain } });
    expect(run.code, run.stderr).toBe(0);
    const report = json<{ removed_rows: Record<string, number>; tables: Array<{ table: string; oldest: string | null }> }>(run);
    // Attempts first: the 95-day one of the pending delivery and the old deliveries' three; then the two
    // old deliveries; then the two old events no delivery refers to any more.
    expect(report.removed_rows).toEqual({ webhook_attempts: 4, webhook_deliveries: 2, webhook_events: 2 });

    expect(await ids("webhook_deliveries")).toEqual([oldPending, recent].sort());
    expect(await attemptsOf(oldPending)).toBe(1);
    expect(await attemptsOf(recent)).toBe(1);
    expect(await attemptsOf(oldFinished)).toBe(0);
    expect(await attemptsOf(oldFailed)).toBe(0);
    // The pending delivery keeps its 450-day-old event; the 399-day-old one is inside the feed's 400 days.
    expect(await ids("webhook_events")).toEqual([referencedEvent, recentEvent, unreferencedYoung].sort());
    expect(await ids("webhook_events")).not.toContain(unreferencedOld);
    const oldest = Object.fromEntries(report.tables.map((table) => [table.table, table.oldest]));
    expect(Date.parse(oldest.webhook_events!)).toBeCloseTo(Date.parse(daysAgo(450)), -5);
  });

  it("purges in batches until one comes back short, so a backlog of any size goes in one run", async () => {
    const oldEvent = await event(500);
    for (let i = 0; i < 7; i++) await delivery(oldEvent, 200, "SUCCEEDED", [200]);
    const calls: number[] = [];
    const pool = createPool({ connectionString: database.roleUrls.maintain, max: 1, applicationName: "retention-test" });
    try {
      const repository = createMaintenanceRepository(pool);
      const counting = {
        ...repository,
        async purge(...args: Parameters<typeof repository.purge>) {
          const purged = await repository.purge(...args);
          if (args[0] === "webhook_deliveries") calls.push(purged);
          return purged;
        },
      };
      const settings = loadMaintainSettings((name) => ({ DATABASE_URL: database.roleUrls.maintain })[name]);
      const report = await runMaintenance({ repository: counting, settings, batchSize: 3 });
      expect(report.ok, JSON.stringify(report.failures)).toBe(true);
      expect(calls).toEqual([3, 3, 1]);
      expect(report.removed.webhook_deliveries).toBe(7);
    } finally {
      await pool.end();
    }
  });

  it("refuses retentions under the floors in the database, and an event retention shorter than the feed's in the settings", async () => {
    await expect(asMaintain.query("SELECT subdata_purge_webhook_deliveries(interval '6 days', 10)")).rejects.toThrow(/at least 7 days/);
    await expect(asMaintain.query("SELECT subdata_purge_webhook_attempts(interval '6 days', 10)")).rejects.toThrow(/at least 7 days/);
    await expect(asMaintain.query("SELECT subdata_purge_webhook_events(interval '29 days', 10)")).rejects.toThrow(/at least 30 days/);
    await expect(asMaintain.query("SELECT subdata_purge_webhook_events(interval '400 days', 0)")).rejects.toThrow(/max_rows/);
    await expect(asMaintain.query("DELETE FROM webhook_deliveries")).rejects.toThrow(/permission denied/);

    const run = await runCli(["maintain"], {
      env: { DATABASE_URL: database.roleUrls.maintain, SUBDATA_FEED_RETENTION_DAYS: "400", SUBDATA_WEBHOOK_EVENT_RETENTION_DAYS: "365" },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/SUBDATA_WEBHOOK_EVENT_RETENTION_DAYS .*less than SUBDATA_FEED_RETENTION_DAYS/);
  });
});
