import { setTimeout as sleep } from "node:timers/promises";
import { ConfigError, createLogger, createMetrics, createPool, startMetricsServer } from "@subdata/runtime";
import type { CliContext, RegisterCommands } from "../cli-context.ts";
import { CliError, configError } from "../cli-error.ts";
import { DURATION_UNIT_MS, parseDuration, parseWholeNumber } from "../option-parsers.ts";
import { loadMaintainSettings, type MaintainSettings } from "../maintain/maintain-settings.ts";
import { createMaintenanceMetrics, pushMetrics } from "../maintain/maintenance-metrics.ts";
import { createMaintenanceRepository } from "../maintain/maintenance-repository.ts";
import { type MaintenanceReport, pgTimeMs, runMaintenance } from "../maintain/run-maintenance.ts";

/** A drain of the default partition takes time in proportion to its rows; nothing else runs long. */
const STATEMENT_TIMEOUT_MS = 15 * 60_000;

function settingsOf(context: CliContext): MaintainSettings {
  try {
    return loadMaintainSettings((name) => context.setting(name));
  } catch (error) {
    if (error instanceof ConfigError) throw configError(error.message);
    throw error;
  }
}

/** Postgres timestamptz text as RFC 3339 (UTC), or null. */
function rfc3339(text: string | null): string | null {
  const ms = pgTimeMs(text);
  return ms === null ? null : new Date(ms).toISOString();
}

function reportJson(report: MaintenanceReport) {
  return {
    ok: report.ok,
    started_at: report.startedAt,
    finished_at: report.finishedAt,
    audit: {
      partitions_created: report.audit.created,
      partitions_dropped: report.audit.dropped,
      dropped_rows_estimate: Number(report.audit.droppedRows),
      covered_until: report.audit.coveredUntil,
      months_ahead: report.audit.monthsAhead,
      default_partition_rows: Number(report.audit.defaultRows),
      partitions: report.audit.partitions.map((partition) => ({
        name: partition.name,
        range_start: rfc3339(partition.rangeStart),
        range_end: rfc3339(partition.rangeEnd),
        is_default: partition.isDefault,
        rows_estimate: Number(partition.rows),
        bytes: Number(partition.bytes),
      })),
    },
    removed_rows: report.removed,
    tables: report.tables.map((table) => ({
      table: table.table,
      oldest: rfc3339(table.oldest),
      rows_estimate: Number(table.rows),
      bytes: Number(table.bytes),
      retention_limit_seconds: table.limitSeconds,
    })),
    failures: report.failures,
  };
}

function reportText(report: MaintenanceReport): string {
  const { audit } = report;
  const lines = [
    `audit_events: ${audit.created.length ? `created ${audit.created.join(", ")}` : "no partition to create"}; ` +
      `${audit.dropped.length ? `dropped ${audit.dropped.join(", ")} (~${audit.droppedRows} rows)` : "none past retention"}; ` +
      `partitions until ${audit.coveredUntil ?? "(none for this month)"} (${audit.monthsAhead} month(s) ahead)` +
      (audit.defaultRows > 0n ? `; ${audit.defaultRows} row(s) in the default partition` : ""),
    ...Object.entries(report.removed).map(([table, rows]) => `${table}: removed ${rows} row(s)`),
    ...report.tables.map((table) => `${table.table}: oldest ${rfc3339(table.oldest) ?? "(empty)"}, ~${table.rows} rows, ${table.bytes} bytes`),
    ...report.failures.map((failure) => `FAILED ${failure.step}: ${failure.error}`),
  ];
  return lines.join("\n");
}

/**
 * `subdata maintain`: one run of the retention task (audit partitions ahead and past retention, the
 * webhook tables' purge, the growing tables' figures), as the Kubernetes CronJob runs it; with --every,
 * again and again, serving its figures on /metrics, as `npm start` runs it.
 */
export const registerMaintainCommand: RegisterCommands = (program, context) => {
  program
    .command("maintain")
    .description(
      "keep stored data bounded: make audit partitions ahead, drop those past SUBDATA_AUDIT_RETENTION_DAYS, purge old webhook " +
        "deliveries, attempts and events, and report every growing table (DATABASE_URL: the subdata_maintain role or an owner)",
    )
    .option("--every <duration>", "run again this long after each run ends (30m, 1h, 1d) until stopped")
    .option("--metrics-port <port>", "with --every: serve Prometheus /metrics on this port (on HOST, default 127.0.0.1)")
    .action(async (options: { every?: string; metricsPort?: string }) => {
      const everyMs =
        options.every === undefined ? undefined : parseDuration(options.every, "--every", { units: ["m", "h", "d"], maxMs: 7 * DURATION_UNIT_MS.d });
      const metricsPort = options.metricsPort === undefined ? undefined : parseWholeNumber(options.metricsPort, "--metrics-port", { min: 0, max: 65_535 });
      if (metricsPort !== undefined && everyMs === undefined)
        throw new CliError("--metrics-port needs --every (a single run pushes to SUBDATA_PUSHGATEWAY_URL instead)");
      const settings = settingsOf(context);
      const pool = createPool({
        connectionString: settings.databaseUrl,
        max: 1,
        statementTimeoutMs: STATEMENT_TIMEOUT_MS,
        applicationName: "subdata-maintain",
      });
      pool.on("error", () => {});
      const registry = createMetrics({ service: "maintain", defaultMetrics: everyMs !== undefined });
      const record = createMaintenanceMetrics(registry);
      const repository = createMaintenanceRepository(pool);
      try {
        if (everyMs === undefined) {
          const report = await runMaintenance({ repository, settings, signal: context.signal });
          record(report);
          if (settings.pushgatewayUrl !== undefined) {
            try {
              await pushMetrics(settings.pushgatewayUrl, registry);
            } catch (error) {
              report.failures.push({ step: "push metrics", error: (error as Error).message });
              report.ok = false;
            }
          }
          context.output.result(reportJson(report), reportText(report));
          if (!report.ok) {
            throw new CliError(
              `maintenance finished with ${report.failures.length} failed step(s): ${report.failures.map((failure) => failure.step).join(", ")}`,
              "maintenance",
              {
                resultPrinted: true,
              },
            );
          }
          return;
        }
        await runRepeatedly({
          everyMs,
          metricsPort,
          host: context.setting("HOST") ?? "127.0.0.1",
          level: context.setting("LOG_LEVEL"),
          settings,
          registry,
          record,
          repository,
          signal: context.signal,
        });
      } finally {
        await pool.end();
      }
    });
};

async function runRepeatedly(options: {
  everyMs: number;
  metricsPort: number | undefined;
  host: string;
  level: string | undefined;
  settings: MaintainSettings;
  registry: ReturnType<typeof createMetrics>;
  record: (report: MaintenanceReport) => void;
  repository: ReturnType<typeof createMaintenanceRepository>;
  /** SIGTERM/SIGINT: the run in progress stops between batches, the timer is cancelled, and the loop ends. */
  signal: AbortSignal;
}): Promise<void> {
  const logger = createLogger({ name: "subdata-maintain", level: options.level ?? "info" });
  const server = options.metricsPort === undefined ? undefined : await startMetricsServer(options.registry, options.host, options.metricsPort);
  if (server) logger.info({ metricsPort: server.address.port }, "maintenance metrics listening");
  try {
    while (!options.signal.aborted) {
      const report = await runMaintenance({ repository: options.repository, settings: options.settings, signal: options.signal });
      options.record(report);
      const summary = {
        created: report.audit.created,
        dropped: report.audit.dropped,
        removed: report.removed,
        coveredUntil: report.audit.coveredUntil,
        defaultPartitionRows: Number(report.audit.defaultRows),
      };
      if (report.ok) logger.info(summary, "maintenance run done");
      else logger.error({ ...summary, failures: report.failures }, "maintenance run had failures; the next run tries again");
      // The wait ends early, without an error, when the signal aborts; the loop condition then ends it.
      await sleep(options.everyMs, undefined, { signal: options.signal }).catch(() => {});
    }
  } finally {
    await server?.close();
    logger.info("maintenance stopped");
  }
}
