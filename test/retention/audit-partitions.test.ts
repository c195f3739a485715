import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, runCli } from "../cli/run-cli.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { auditPartitions, insertAuditRow, monthStart, partitionName } from "./support.ts";

// The audit log's life: partitions made ahead, rows of a month without one kept in the default
// partition and moved to their month, whole months dropped past retention by the maintenance role and
// recorded — and still no way for any service role, or the superuser, to change or remove a row.

let database: TestDatabase;
let admin: pg.Pool;
const roles: Record<string, pg.Pool> = {};

const maintain = (env: Record<string, string> = {}) => runCli(["maintain", "--json"], { env: { DATABASE_URL: database.roleUrls.maintain, ...env } });

beforeAll(async () => {
  database = await createTestDatabase("audit_partitions");
  admin = new pg.Pool({ connectionString: database.adminUrl, max: 2, options: "-c TimeZone=UTC" });
  for (const [name, url] of Object.entries(database.roleUrls)) roles[name] = new pg.Pool({ connectionString: url, max: 1 });
});

afterAll(async () => {
  await Promise.all(Object.values(roles).map((pool) => pool.end()));
  await admin?.end();
  await database?.drop();
});

describe("the partitioned audit log", () => {
  it("has this month's partition and three more ahead, each covering one UTC month, and an empty default partition", async () => {
    const partitions = await auditPartitions(admin);
    expect(partitions[0]).toMatchObject({ partition_name: "audit_events_default", is_default: true });
    const monthly = partitions.filter((partition) => !partition.is_default);
    expect(monthly.slice(0, 4)).toEqual(
      [0, 1, 2, 3].map((offset) => ({
        partition_name: partitionName(offset),
        range_start: monthStart(offset),
        range_end: monthStart(offset + 1),
        is_default: false,
      })),
    );
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM audit_events_default");
    expect(rows[0].n).toBe(0);
  });

  it("routes a row to its month, and one of a month without a partition to the default partition, which maintain then moves", async () => {
    const thisMonth = await insertAuditRow(admin, "mer_routing", new Date().toISOString());
    const farAhead = await insertAuditRow(admin, "mer_routing", "2031-07-04T12:00:00.123456Z");
    const where = async (id: string) =>
      (await admin.query<{ partition: string }>("SELECT tableoid::regclass::text AS partition FROM audit_events WHERE id = $1", [id])).rows[0]?.partition;
    expect(await where(thisMonth)).toBe(partitionName(0));
    expect(await where(farAhead)).toBe("audit_events_default");

    const run = await maintain();
    expect(run.code, run.stderr).toBe(0);
    const report = json<{ ok: boolean; audit: { partitions_created: string[]; default_partition_rows: number } }>(run);
    expect(report.ok).toBe(true);
    expect(report.audit.partitions_created).toContain("audit_events_2031_07");
    expect(report.audit.default_partition_rows).toBe(0);
    expect(await where(farAhead)).toBe("audit_events_2031_07");
    const moved = await admin.query("SELECT occurred_at::text, resource_ids FROM audit_events WHERE id = $1", [farAhead]);
    expect(moved.rows).toEqual([{ occurred_at: "2031-07-04 12:00:00.123456+00", resource_ids: ["sub_a", "sub_b"] }]);
    const drained = await admin.query("SELECT rows, done_by FROM audit_partition_log WHERE action = 'drained'");
    expect(drained.rows).toEqual([{ rows: "1", done_by: "subdata_maintain" }]);
  });

  it("drops a month whose every row is past retention, whole, records who did it, and keeps the younger ones", async () => {
    const expired = await insertAuditRow(admin, "mer_expiry", new Date(Date.now() - 500 * 86_400_000).toISOString());
    const kept = await insertAuditRow(admin, "mer_expiry", new Date(Date.now() - 40 * 86_400_000).toISOString());
    const expiredMonth = `audit_events_${new Date(Date.now() - 500 * 86_400_000).toISOString().slice(0, 7).replace("-", "_")}`;

    const run = await maintain({ SUBDATA_AUDIT_RETENTION_DAYS: "400" });
    expect(run.code, run.stderr).toBe(0);
    const report = json<{ audit: { partitions_dropped: string[]; partitions_created: string[] } }>(run);
    // The row sat in the default partition: its month was made for it, then dropped in the same run.
    expect(report.audit.partitions_created).toContain(expiredMonth);
    expect(report.audit.partitions_dropped).toEqual([expiredMonth]);
    const remaining = await admin.query<{ id: string }>("SELECT id FROM audit_events WHERE merchant_id = 'mer_expiry'");
    expect(remaining.rows.map((row) => row.id)).toEqual([kept]);
    expect(remaining.rows.map((row) => row.id)).not.toContain(expired);
    const log = await admin.query(
      "SELECT action, partition_name, range_start::text, done_by, bytes > 0 AS sized FROM audit_partition_log WHERE action IN ('detached', 'dropped') ORDER BY id",
    );
    const recorded = {
      partition_name: expiredMonth,
      range_start: `${expiredMonth.slice(13).replace("_", "-")}-01 00:00:00+00`,
      done_by: "subdata_maintain",
      sized: true,
    };
    expect(log.rows).toEqual([
      { action: "detached", ...recorded },
      { action: "dropped", ...recorded },
    ]);
    // Detached, then its files dropped: no table of it is left.
    const left = await admin.query("SELECT relname FROM pg_class WHERE relname LIKE $1", [`${expiredMonth}%`]);
    expect(left.rows).toEqual([]);

    // Nothing else is due: a second run drops nothing.
    const again = json<{ audit: { partitions_dropped: string[] } }>(await maintain({ SUBDATA_AUDIT_RETENTION_DAYS: "400" }));
    expect(again.audit.partitions_dropped).toEqual([]);
  });

  it("drops on its next run a month that an interrupted run detached but did not drop", async () => {
    await insertAuditRow(admin, "mer_interrupted", new Date(Date.now() - 700 * 86_400_000).toISOString());
    const month = `audit_events_${new Date(Date.now() - 700 * 86_400_000).toISOString().slice(0, 7).replace("-", "_")}`;
    await roles.maintain!.query("SELECT subdata_audit_prepare_partitions(3)");
    // The first step alone, as a run that died between the two would leave it.
    const detached = await roles.maintain!.query("SELECT partition_name FROM subdata_audit_detach_expired_partition(interval '400 days')");
    expect(detached.rows).toEqual([{ partition_name: month }]);
    const parked = await admin.query("SELECT relname FROM pg_class WHERE relname = $1", [`${month}_expired`]);
    expect(parked.rowCount).toBe(1);
    expect((await admin.query("SELECT count(*)::int AS n FROM audit_events WHERE merchant_id = 'mer_interrupted'")).rows[0].n).toBe(0);

    const run = await maintain();
    expect(run.code, run.stderr).toBe(0);
    expect((await admin.query("SELECT relname FROM pg_class WHERE relname = $1", [`${month}_expired`])).rowCount).toBe(0);
    const log = await admin.query("SELECT action FROM audit_partition_log WHERE partition_name = $1 AND action IN ('detached', 'dropped') ORDER BY id", [
      month,
    ]);
    expect(log.rows.map((row) => row.action)).toEqual(["detached", "dropped"]);
  });

  it("never drops a month younger than 30 days: the setting refuses less, and so does the database, whoever calls it", async () => {
    const run = await maintain({ SUBDATA_AUDIT_RETENTION_DAYS: "29" });
    expect(run.code).toBe(1);
    expect(json<{ error: { code: string; message: string } }>(run).error).toMatchObject({
      code: "config",
      message: expect.stringContaining("SUBDATA_AUDIT_RETENTION_DAYS"),
    });
    for (const pool of [roles.maintain!, admin]) {
      await expect(pool.query("SELECT * FROM subdata_audit_detach_expired_partition(interval '29 days')")).rejects.toThrow(/at least 30 days/);
      await expect(pool.query("SELECT * FROM subdata_audit_detach_expired_partition(NULL)")).rejects.toThrow(/at least 30 days/);
    }
  });

  it("lets the maintenance role call its functions and nothing else: no table of data, no partition, no drop of its own", async () => {
    const asMaintain = roles.maintain!;
    for (const sql of [
      "SELECT count(*) FROM audit_events",
      `SELECT count(*) FROM ${partitionName(0)}`,
      "SELECT count(*) FROM webhook_deliveries",
      "INSERT INTO audit_partition_log (action, partition_name) VALUES ('dropped', 'x')",
      `DROP TABLE ${partitionName(1)}`,
      `ALTER TABLE audit_events DETACH PARTITION ${partitionName(1)}`,
      "SELECT subdata_audit_drain_default()",
      `SELECT subdata_audit_create_partition('2040-01-01')`,
      "SELECT subdata_purge_security_events(interval '90 days', 10)",
    ]) {
      await expect(asMaintain.query(sql), sql).rejects.toThrow(/permission denied|must be owner/);
    }
  });
});

describe("the partitioned audit log stays append-only", () => {
  const changes = (relation: string) => [
    ["UPDATE", `UPDATE ${relation} SET status = 500`],
    ["DELETE", `DELETE FROM ${relation}`],
    ["TRUNCATE", `TRUNCATE ${relation}`],
  ];

  it("for every service role, on the table and on each partition", async () => {
    await insertAuditRow(admin, "mer_append_only", new Date().toISOString());
    const relations = ["audit_events", ...(await auditPartitions(admin)).map((partition) => partition.partition_name)];
    for (const [role, pool] of Object.entries(roles)) {
      for (const relation of relations) {
        // subdata_query's sessions are read-only as well: either refusal will do.
        for (const [verb, sql] of changes(relation))
          await expect(pool.query(sql!), `${role} ${verb} ${relation}`).rejects.toThrow(/permission denied|read-only/);
      }
    }
    const privileges = await admin.query<{ role: string; relation: string; privilege: string }>(
      `SELECT r.rolname AS role, t.relation, p.privilege
         FROM pg_roles r
        CROSS JOIN unnest($1::text[]) AS t(relation)
        CROSS JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) AS p(privilege)
        WHERE r.rolname LIKE 'subdata\\_%' AND has_table_privilege(r.rolname, t.relation, p.privilege)`,
      [[...relations, "audit_partition_log"]],
    );
    expect(privileges.rows.sort((a, b) => `${a.role}${a.relation}${a.privilege}`.localeCompare(`${b.role}${b.relation}${b.privilege}`))).toEqual([
      { role: "subdata_auth", relation: "audit_events", privilege: "INSERT" },
      { role: "subdata_auth", relation: "audit_events", privilege: "SELECT" },
      { role: "subdata_maintain", relation: "audit_partition_log", privilege: "SELECT" },
    ]);
  });

  it("even for the superuser, through the triggers, on every partition and on the log of drops", async () => {
    // Row triggers fire only for rows: every partition gets one, the default partition too.
    for (const partition of await auditPartitions(admin)) {
      const at = partition.is_default ? "2045-01-01T00:00:00Z" : (partition.range_start ?? "2000-01-01T00:00:00Z");
      await insertAuditRow(admin, "mer_append_only", at);
    }
    const relations = ["audit_events", ...(await auditPartitions(admin)).map((partition) => partition.partition_name), "audit_partition_log"];
    const before = await admin.query("SELECT (SELECT count(*) FROM audit_events) AS events, (SELECT count(*) FROM audit_partition_log) AS log");
    for (const relation of relations) {
      for (const [verb, sql] of changes(relation)) {
        const statement = relation === "audit_partition_log" && verb === "UPDATE" ? `UPDATE ${relation} SET rows = 0` : sql!;
        await expect(admin.query(statement), `${verb} ${relation}`).rejects.toThrow(/append-only/);
      }
    }
    const after = await admin.query("SELECT (SELECT count(*) FROM audit_events) AS events, (SELECT count(*) FROM audit_partition_log) AS log");
    expect(after.rows).toEqual(before.rows);
  });
});
