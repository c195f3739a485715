import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { migrate } from "@subdata/db";
import { runner } from "node-pg-migrate";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { migrationsDir } from "../../services/db/src/migrate.ts";
import { auditPartitions, insertAuditRow, monthStart, partitionName } from "./support.ts";

// A database whose audit log was written before partitioning: the migration keeps every row as it was,
// in place, and the log stays append-only throughout.

const PARTITION_MIGRATION = "20261127000100000_audit_partitions";
const serverUrl = new URL(inject("adminDatabaseUrl"));
const databaseName = `subdata_audit_migration_${randomBytes(4).toString("hex")}`;
const databaseUrl = Object.assign(new URL(serverUrl), { pathname: `/${databaseName}` }).toString();
const server = new pg.Client({ connectionString: serverUrl.toString() });
let db: pg.Client;

beforeAll(async () => {
  await server.connect();
  await server.query(`CREATE DATABASE ${databaseName}`);
  const before = readdirSync(migrationsDir).filter((file) => file.endsWith(".sql") && file < PARTITION_MIGRATION).length;
  await runner({ databaseUrl, dir: migrationsDir, direction: "up", count: before, migrationsTable: "pgmigrations", log: () => {} });
  db = new pg.Client({ connectionString: databaseUrl, options: "-c TimeZone=UTC" });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await server.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
  await server.end();
});

describe("the audit partitioning migration", () => {
  it("keeps every row of the unpartitioned table, byte for byte, in a partition that holds the time before it", async () => {
    const day = 86_400_000;
    const written = [
      await insertAuditRow(db, "mer_history", new Date(Date.now() - 700 * day).toISOString()),
      await insertAuditRow(db, "mer_history", new Date(Date.now() - 3 * day).toISOString(), { resourceIds: Array.from({ length: 50 }, (_, i) => `sub_${i}`) }),
      await insertAuditRow(db, "mer_history", new Date().toISOString(), { resourceIds: [] }),
      // A clock far ahead wrote this one.
      await insertAuditRow(db, "mer_history", "2033-03-03T03:03:03.030303Z"),
    ];
    const snapshot = "SELECT a::text AS row FROM audit_events a ORDER BY occurred_at, id";
    const before = (await db.query<{ row: string }>(snapshot)).rows;
    expect(before).toHaveLength(4);

    expect(await migrate({ databaseUrl })).toContain(PARTITION_MIGRATION);

    expect((await db.query<{ row: string }>(snapshot)).rows).toEqual(before);
    const history = `audit_events_before_${partitionName(1).slice("audit_events_".length)}`;
    const partitions = await auditPartitions(db);
    expect(partitions).toEqual(
      expect.arrayContaining([
        { partition_name: history, range_start: null, range_end: monthStart(1), is_default: false },
        { partition_name: "audit_events_2033_03", range_start: "2033-03-01 00:00:00+00", range_end: "2033-04-01 00:00:00+00", is_default: false },
        { partition_name: partitionName(1), range_start: monthStart(1), range_end: monthStart(2), is_default: false },
      ]),
    );
    const where = await db.query<{ id: string; partition: string }>("SELECT id, tableoid::regclass::text AS partition FROM audit_events ORDER BY occurred_at");
    expect(where.rows.map((row) => row.partition)).toEqual([history, history, history, "audit_events_2033_03"]);
    expect(where.rows.map((row) => row.id).sort()).toEqual([...written].sort());

    // Still append-only, on the history partition itself too, and still no privilege but the auth role's SELECT and INSERT on the parent.
    for (const sql of [`UPDATE ${history} SET status = 500`, `DELETE FROM ${history}`, `TRUNCATE ${history}`, "DELETE FROM audit_events"]) {
      await expect(db.query(sql), sql).rejects.toThrow(/append-only/);
    }
    const grants = await db.query(
      `SELECT grantee, privilege_type FROM information_schema.role_table_grants WHERE table_name = $1 AND grantee LIKE 'subdata\\_%'`,
      [history],
    );
    expect(grants.rows).toEqual([]);
    // The history partition has the same indexes as every other, under its own names.
    const indexes = await db.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", [history]);
    expect(indexes.rows.map((row) => row.indexname)).toEqual([`${history}_merchant_key_keyset`, `${history}_merchant_keyset`, `${history}_pkey`]);
  });
});
