import { Counter, Gauge, type Registry } from "@subdata/runtime";
import type { PurgedTable, RoundResult } from "./relay.ts";

/** Reads the pending part of the outbox (partial index event_outbox_pending). */
export interface OutboxBacklogSource {
  query<R>(text: string): Promise<{ rows: R[] }>;
}

const BACKLOG_SQL = `SELECT count(*)::int AS pending,
       COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(e.occurred_at)), 0)::float8 AS oldest_seconds
  FROM event_outbox o JOIN change_events e ON e.id = o.id
 WHERE o.published_at IS NULL`;

/**
 * The relay's metrics: events published/failed per round (counters) and the outbox backlog, read at
 * scrape time so there is no timer to stop: subdata_outbox_pending_events and
 * subdata_outbox_oldest_pending_seconds (the lag of the slowest event still waiting). If Postgres does
 * not answer, the backlog gauges keep their last values and subdata_outbox_backlog_scrape_errors_total
 * counts the miss. subdata_relay_purged_rows_total{table} counts what retention removed: published
 * outbox rows, and the change feed's commits (each with its events).
 */
export function createRelayMetrics(
  registry: Registry,
  db: OutboxBacklogSource,
): { onRound: (round: RoundResult) => void; onPurge: (table: PurgedTable, count: number) => void } {
  const events = new Counter({
    name: "subdata_relay_events_total",
    help: "Outbox events handled by the relay, by outcome (published, failed: left pending for retry, unconvertible)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const rounds = new Counter({ name: "subdata_relay_rounds_total", help: "Claim/publish/mark rounds that reached Postgres", registers: [registry] });
  const scrapeErrors = new Counter({
    name: "subdata_outbox_backlog_scrape_errors_total",
    help: "Scrapes where the outbox backlog could not be read",
    registers: [registry],
  });
  for (const outcome of ["published", "failed", "unconvertible"]) events.inc({ outcome }, 0);
  const purged = new Counter({
    name: "subdata_relay_purged_rows_total",
    help: "Rows removed by retention: event_outbox (published outbox rows), change_commits (feed commits, each with its events)",
    labelNames: ["table"] as const,
    registers: [registry],
  });
  for (const table of ["event_outbox", "change_commits"] satisfies PurgedTable[]) purged.inc({ table }, 0);
  let backlog: Promise<{ pending: number; oldest_seconds: number } | undefined> | undefined;
  // Both gauges are collected in one scrape: share one query between them.
  const readBacklog = () => {
    backlog ??= db
      .query<{ pending: number; oldest_seconds: number }>(BACKLOG_SQL)
      .then((result) => result.rows[0])
      .catch(() => {
        scrapeErrors.inc();
        return undefined;
      })
      .finally(() => setImmediate(() => (backlog = undefined)));
    return backlog;
  };
  new Gauge({
    name: "subdata_outbox_pending_events",
    help: "Outbox rows not yet published to JetStream",
    registers: [registry],
    async collect() {
      const row = await readBacklog();
      if (row) this.set(row.pending);
    },
  });
  new Gauge({
    name: "subdata_outbox_oldest_pending_seconds",
    help: "Age of the oldest unpublished outbox row (0 when none): the relay's lag",
    registers: [registry],
    async collect() {
      const row = await readBacklog();
      if (row) this.set(row.oldest_seconds);
    },
  });
  return {
    onRound(round) {
      rounds.inc();
      events.inc({ outcome: "published" }, round.published);
      events.inc({ outcome: "failed" }, round.failed);
      events.inc({ outcome: "unconvertible" }, round.unconvertible);
    },
    onPurge(table, count) {
      purged.inc({ table }, count);
    },
  };
}
