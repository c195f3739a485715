import { Gauge, type Registry } from "@subdata/runtime";
import { PURGES, type PurgedTable } from "./maintenance-repository.ts";
import { type MaintenanceReport, pgTimeMs } from "./run-maintenance.ts";

/**
 * The figures of the last run, as gauges: in the CronJob they are pushed to a Pushgateway after each
 * run (a finished Job is not scraped), under `--every` they are served on /metrics. Times are exported
 * as timestamps rather than ages, so an alert computes the age with time() and still fires when runs
 * stop and nothing is updated any more (docs/observability.md, "Retention and partitions").
 */
export function createMaintenanceMetrics(registry: Registry): (report: MaintenanceReport) => void {
  const registers = [registry];
  const lastRun = new Gauge({ name: "subdata_maintenance_last_run_timestamp_seconds", help: "When the last maintenance run ended", registers });
  const lastSuccess = new Gauge({
    name: "subdata_maintenance_last_success_timestamp_seconds",
    help: "When the last maintenance run that completed every step ended",
    registers,
  });
  const duration = new Gauge({ name: "subdata_maintenance_last_run_duration_seconds", help: "How long the last maintenance run took", registers });
  const failedSteps = new Gauge({ name: "subdata_maintenance_last_run_failed_steps", help: "Steps of the last run that failed (see its log)", registers });
  const removed = new Gauge({
    name: "subdata_maintenance_last_run_removed_rows",
    help: "Rows the last run removed, per table (audit_events: the dropped partitions' estimate)",
    labelNames: ["table"],
    registers,
  });
  const partitionsChanged = new Gauge({
    name: "subdata_maintenance_last_run_partitions",
    help: "Audit partitions the last run created or dropped",
    labelNames: ["action"],
    registers,
  });
  const oldest = new Gauge({
    name: "subdata_table_oldest_row_timestamp_seconds",
    help: "Time of the oldest row of each growing table, by the column its retention goes by",
    labelNames: ["table"],
    registers,
  });
  const limit = new Gauge({
    name: "subdata_table_retention_limit_seconds",
    help: "The oldest a row may be under the configured retention",
    labelNames: ["table"],
    registers,
  });
  const rows = new Gauge({
    name: "subdata_table_rows_estimate",
    help: "Rows of each growing table (the planner's estimate)",
    labelNames: ["table"],
    registers,
  });
  const bytes = new Gauge({
    name: "subdata_table_bytes",
    help: "Size on disk of each growing table, indexes and TOAST included",
    labelNames: ["table"],
    registers,
  });
  const coveredUntil = new Gauge({
    name: "subdata_audit_partitions_covered_until_timestamp_seconds",
    help: "End of the audit partitions that follow one another from the current month on",
    registers,
  });
  const monthsAhead = new Gauge({ name: "subdata_audit_partitions_ahead", help: "Whole months of audit partitions made after the current one", registers });
  const defaultRows = new Gauge({
    name: "subdata_audit_default_partition_rows",
    help: "Rows in the default audit partition (rows whose month had no partition); should be 0",
    registers,
  });

  return (report) => {
    const ended = Date.parse(report.finishedAt) / 1_000;
    lastRun.set(ended);
    if (report.ok) lastSuccess.set(ended);
    duration.set(ended - Date.parse(report.startedAt) / 1_000);
    failedSteps.set(report.failures.length);
    for (const table of Object.keys(PURGES) as PurgedTable[]) removed.set({ table }, report.removed[table]);
    removed.set({ table: "audit_events" }, Number(report.audit.droppedRows));
    partitionsChanged.set({ action: "created" }, report.audit.created.length);
    partitionsChanged.set({ action: "dropped" }, report.audit.dropped.length);
    for (const table of report.tables) {
      const oldestMs = pgTimeMs(table.oldest);
      // An empty table has no oldest row: its series goes, rather than reading as 1970.
      if (oldestMs === null) oldest.remove({ table: table.table });
      else oldest.set({ table: table.table }, oldestMs / 1_000);
      limit.set({ table: table.table }, table.limitSeconds);
      rows.set({ table: table.table }, Number(table.rows));
      bytes.set({ table: table.table }, Number(table.bytes));
    }
    if (report.audit.coveredUntil !== null) coveredUntil.set(Date.parse(report.audit.coveredUntil) / 1_000);
    else coveredUntil.set(0);
    monthsAhead.set(report.audit.monthsAhead);
    defaultRows.set(Number(report.audit.defaultRows));
  };
}

/**
 * PUTs the registry to a Pushgateway under job "subdata_maintain", replacing the previous run's
 * figures (a PUT replaces the whole group). Throws when the gateway does not answer 2xx.
 */
export async function pushMetrics(pushgatewayUrl: string, registry: Registry): Promise<void> {
  const url = new URL("metrics/job/subdata_maintain", pushgatewayUrl.endsWith("/") ? pushgatewayUrl : `${pushgatewayUrl}/`);
  const response = await fetch(url, {
    method: "PUT",
    headers: { "content-type": registry.contentType },
    body: await registry.metrics(),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`the Pushgateway at ${url.origin} answered ${response.status}`);
}
