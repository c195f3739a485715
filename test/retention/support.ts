import { randomUUID } from "node:crypto";
import type { Queryable } from "@subdata/runtime";

/** One audit row as the auth service writes it, at `occurredAt` (any timestamptz text). */
export async function insertAuditRow(db: Queryable, merchantId: string, occurredAt: string, overrides: { resourceIds?: string[] } = {}): Promise<string> {
  const id = `aud_${randomUUID().replaceAll("-", "")}`;
  await db.query(
    `INSERT INTO audit_events (id, occurred_at, merchant_id, api_key_id, request_id, method, route, query, resource_ids,
       result_count, status, client_ip, user_agent, latency_micros)
     VALUES ($1, $2::timestamptz, $3, 'key_retention', 'req_' || $1, 'GET', '/v1/subscriptions', 'limit=2', $4, 2, 200,
             '198.51.100.7', 'retention-test', 1234)`,
    [id, occurredAt, merchantId, overrides.resourceIds ?? ["sub_a", "sub_b"]],
  );
  return id;
}

export interface PartitionRow {
  partition_name: string;
  range_start: string | null;
  range_end: string | null;
  is_default: boolean;
}

/** The audit partitions, oldest first (the default partition first). */
export async function auditPartitions(db: Queryable): Promise<PartitionRow[]> {
  const { rows } = await db.query<PartitionRow>(
    "SELECT partition_name, range_start::text, range_end::text, is_default FROM subdata_audit_partitions() ORDER BY is_default DESC, range_start NULLS FIRST",
  );
  return rows;
}

/** The first instant of the month `offset` months from this one, UTC, as Postgres text. */
export function monthStart(offset: number, from = new Date()): string {
  const date = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + offset, 1));
  return `${date.toISOString().slice(0, 10)} 00:00:00+00`;
}

/** The name of the partition of the month `offset` months from this one. */
export function partitionName(offset: number, from = new Date()): string {
  const date = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + offset, 1));
  return `audit_events_${date.toISOString().slice(0, 7).replace("-", "_")}`;
}
