import type { Queryable } from "@subdata/runtime";

/** The tables `subdata maintain` purges row by row, each through its SECURITY DEFINER function. */
export const PURGES = {
  webhook_attempts: "subdata_purge_webhook_attempts",
  webhook_deliveries: "subdata_purge_webhook_deliveries",
  webhook_events: "subdata_purge_webhook_events",
} as const;

export type PurgedTable = keyof typeof PURGES;

export interface AuditPartition {
  name: string;
  /** Postgres timestamptz text (UTC); null: unbounded. */
  rangeStart: string | null;
  rangeEnd: string | null;
  isDefault: boolean;
  /** The planner's estimate; exact (up to 1,000,000) for the default partition, which should be empty. */
  rows: bigint;
  bytes: bigint;
}

export interface TableStatus {
  table: string;
  /** Postgres timestamptz text of the oldest row by the column its retention goes by; null when empty. */
  oldest: string | null;
  rows: bigint;
  bytes: bigint;
}

/** The maintenance role's statements: each a call of a function the migrations define. */
export interface MaintenanceRepository {
  /** Drains the default partition if it holds rows, then makes this month's and `monthsAhead` more. Returns the partitions made. */
  preparePartitions(monthsAhead: number): Promise<string[]>;
  /** Detaches the oldest audit partition past retention and returns it (name, estimated rows); null when none is due. */
  detachExpiredPartition(retentionDays: number): Promise<{ name: string; rows: bigint } | null>;
  /** Drops one partition detached earlier and returns its name; null when none is left. */
  dropDetachedPartition(): Promise<string | null>;
  /** One batch of at most `maxRows`; returns how many rows went. */
  purge(table: PurgedTable, retentionDays: number, maxRows: number): Promise<number>;
  auditPartitions(): Promise<AuditPartition[]>;
  tableStatus(): Promise<TableStatus[]>;
}

export function createMaintenanceRepository(db: Queryable): MaintenanceRepository {
  return {
    async preparePartitions(monthsAhead) {
      const { rows } = await db.query<{ name: string }>("SELECT subdata_audit_prepare_partitions($1) AS name", [monthsAhead]);
      return rows.map((row) => row.name);
    },
    async detachExpiredPartition(retentionDays) {
      const { rows } = await db.query<{ name: string; rows: bigint }>(
        "SELECT partition_name AS name, approx_rows AS rows FROM subdata_audit_detach_expired_partition(make_interval(days => $1))",
        [retentionDays],
      );
      const detached = rows[0];
      return detached ? { name: detached.name, rows: BigInt(detached.rows) } : null;
    },
    async dropDetachedPartition() {
      const { rows } = await db.query<{ name: string | null }>("SELECT subdata_audit_drop_detached_partition() AS name");
      return rows[0]?.name ?? null;
    },
    async purge(table, retentionDays, maxRows) {
      const { rows } = await db.query<{ purged: number }>(`SELECT ${PURGES[table]}(make_interval(days => $1), $2) AS purged`, [retentionDays, maxRows]);
      return rows[0]?.purged ?? 0;
    },
    async auditPartitions() {
      const { rows } = await db.query<{ name: string; range_start: string | null; range_end: string | null; is_default: boolean; rows: bigint; bytes: bigint }>(
        "SELECT partition_name AS name, range_start, range_end, is_default, approx_rows AS rows, bytes FROM subdata_audit_partition_status() ORDER BY range_start NULLS FIRST",
      );
      return rows.map((row) => ({
        name: row.name,
        rangeStart: row.range_start,
        rangeEnd: row.range_end,
        isDefault: row.is_default,
        rows: BigInt(row.rows),
        bytes: BigInt(row.bytes),
      }));
    },
    async tableStatus() {
      const { rows } = await db.query<{ table_name: string; oldest: string | null; approx_rows: bigint; bytes: bigint }>(
        "SELECT table_name, oldest, approx_rows, bytes FROM subdata_retention_status()",
      );
      return rows.map((row) => ({ table: row.table_name, oldest: row.oldest, rows: BigInt(row.approx_rows), bytes: BigInt(row.bytes) }));
    },
  };
}
