import type { MaintainSettings } from "./maintain-settings.ts";
import type { AuditPartition, MaintenanceRepository, PurgedTable, TableStatus } from "./maintenance-repository.ts";

const DAY_SECONDS = 86_400;
/** The longest month: a partition is dropped only once its last day is past retention. */
const PARTITION_SPAN_DAYS = 31;
/** A delivery resent near the end of its retention stays while its retries run (about 3.5 days). */
const RETRY_SCHEDULE_DAYS = 4;
/** Lock waits are bounded in the database (2 s); a drop that timed out is tried again this often. */
const DROP_ATTEMPTS = 3;

export interface TableReport extends TableStatus {
  /** How old a row may become under the configured retention; older means retention is not keeping up. */
  limitSeconds: number;
}

export interface MaintenanceReport {
  startedAt: string;
  finishedAt: string;
  /** Every step succeeded. */
  ok: boolean;
  audit: {
    created: string[];
    dropped: string[];
    /** The dropped partitions' rows (the planner's estimate, read without a scan). */
    droppedRows: bigint;
    partitions: AuditPartition[];
    /** The end of the partitions that follow one another from the current month on (RFC 3339), or null. */
    coveredUntil: string | null;
    /** Whole months covered after the current one. */
    monthsAhead: number;
    /** Rows in the default partition (should be none). */
    defaultRows: bigint;
  };
  /** Rows removed per table in this run. */
  removed: Record<PurgedTable, number>;
  tables: TableReport[];
  failures: Array<{ step: string; error: string }>;
}

export interface MaintenanceOptions {
  repository: MaintenanceRepository;
  settings: MaintainSettings;
  /** Rows per purge batch (one short transaction each). */
  batchSize?: number;
  /** Stops between batches (SIGTERM). */
  signal?: AbortSignal;
  now?: () => number;
  /** Pause between attempts of a drop that found the table locked. */
  pause?: (ms: number) => Promise<void>;
}

/**
 * One maintenance run: audit partitions made ahead and dropped past retention, the webhook tables
 * purged batch by batch until a batch comes back short (so the purge keeps up with any rate the
 * tables fill at), then every growing table's oldest row, size and limit. A step that fails is reported
 * and the others still run: a locked audit table must not stop the webhook purge.
 */
export async function runMaintenance(options: MaintenanceOptions): Promise<MaintenanceReport> {
  const { repository, settings } = options;
  const now = options.now ?? Date.now;
  const batchSize = options.batchSize ?? 5_000;
  const pause = options.pause ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const startedAt = new Date(now()).toISOString();
  const failures: MaintenanceReport["failures"] = [];
  const step = async (name: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      failures.push({ step: name, error: error instanceof Error ? error.message : String(error) });
    }
  };
  const stopped = () => options.signal?.aborted ?? false;

  const created: string[] = [];
  const dropped: string[] = [];
  let droppedRows = 0n;
  await step("audit partitions ahead", async () => {
    created.push(...(await repository.preparePartitions(settings.auditPartitionsAhead)));
  });
  // A month leaves in two steps (see the migration): detached from the table, then its files dropped,
  // so no reader waits behind a lock while they are deleted.
  await step("audit retention", async () => {
    let attempts = 0;
    while (!stopped()) {
      let partition: { name: string; rows: bigint } | null;
      try {
        partition = await repository.detachExpiredPartition(settings.auditRetentionDays);
      } catch (error) {
        if (!isLockTimeout(error) || ++attempts >= DROP_ATTEMPTS) throw error;
        await pause(1_000 * attempts);
        continue;
      }
      if (partition === null) break;
      dropped.push(partition.name);
      droppedRows += partition.rows;
    }
    while (!stopped() && (await repository.dropDetachedPartition()) !== null);
  });

  const removed: Record<PurgedTable, number> = { webhook_attempts: 0, webhook_deliveries: 0, webhook_events: 0 };
  // Attempts, then deliveries (their attempts go with them), then events no delivery refers to any more.
  const purges: Array<[PurgedTable, number]> = [
    ["webhook_attempts", settings.deliveryRetentionDays],
    ["webhook_deliveries", settings.deliveryRetentionDays],
    ["webhook_events", settings.eventRetentionDays],
  ];
  for (const [table, days] of purges) {
    await step(`${table} retention`, async () => {
      while (!stopped()) {
        const purged = await repository.purge(table, days, batchSize);
        removed[table] += purged;
        if (purged < batchSize) break;
      }
    });
  }

  let partitions: AuditPartition[] = [];
  let tables: TableReport[] = [];
  await step("status", async () => {
    partitions = await repository.auditPartitions();
    const limits = tableLimits(settings);
    tables = (await repository.tableStatus()).map((status) => ({ ...status, limitSeconds: limits[status.table] ?? 0 }));
  });
  const coverage = coverageFrom(partitions, now());
  return {
    startedAt,
    finishedAt: new Date(now()).toISOString(),
    ok: failures.length === 0,
    audit: {
      created,
      dropped,
      droppedRows,
      partitions,
      ...coverage,
      defaultRows: partitions.find((partition) => partition.isDefault)?.rows ?? 0n,
    },
    removed,
    tables,
    failures,
  };
}

/** The oldest a row of each table may be under the settings (retention plus what the policy adds). */
function tableLimits(settings: MaintainSettings): Record<string, number> {
  const days = (count: number) => count * DAY_SECONDS;
  return {
    audit_events: days(settings.auditRetentionDays + PARTITION_SPAN_DAYS),
    webhook_attempts: days(settings.deliveryRetentionDays),
    webhook_deliveries: days(settings.deliveryRetentionDays + RETRY_SCHEDULE_DAYS),
    // An event stays while a delivery refers to it; a replay makes a new delivery of an old event.
    webhook_events: days(settings.eventRetentionDays + settings.deliveryRetentionDays + RETRY_SCHEDULE_DAYS),
    security_events: days(settings.securityEventRetentionDays),
    event_outbox: days(settings.outboxRetentionDays),
    change_commits: days(settings.feedRetentionDays),
    change_events: days(settings.feedRetentionDays),
  };
}

/** From the partition holding `nowMs`, how far the partitions run without a gap. */
function coverageFrom(partitions: readonly AuditPartition[], nowMs: number): { coveredUntil: string | null; monthsAhead: number } {
  const bounded = partitions
    .filter((partition) => !partition.isDefault)
    .map((partition) => ({ start: pgTimeMs(partition.rangeStart) ?? -Infinity, end: pgTimeMs(partition.rangeEnd) ?? Infinity }))
    .sort((a, b) => a.start - b.start);
  const current = bounded.find((partition) => partition.start <= nowMs && nowMs < partition.end);
  if (!current) return { coveredUntil: null, monthsAhead: 0 };
  let end = current.end;
  let monthsAhead = 0;
  for (let next = bounded.find((partition) => partition.start === end); next; next = bounded.find((partition) => partition.start === end)) {
    end = next.end;
    monthsAhead += 1;
  }
  return { coveredUntil: Number.isFinite(end) ? new Date(end).toISOString() : null, monthsAhead };
}

/** Postgres timestamptz text ("2026-12-01 00:00:00+00") → ms; null stays null. */
export function pgTimeMs(text: string | null): number | null {
  if (text === null) return null;
  const iso = text.replace(" ", "T").replace(/([+-]\d{2})$/, "$1:00");
  return Date.parse(iso);
}

function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown }).code === "55P03";
}
