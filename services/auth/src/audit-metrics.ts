import { Counter, Histogram, type OverloadReason, type Registry } from "@subdata/runtime";

/**
 * Group-commit audit metrics, fed by the writer's onFlush hook: batch sizes (how much group commit
 * is saving) and flushes by outcome (a failed flush is a burst of 503s at the gateway). The write
 * latency callers see is the AuditService/RecordRead RPC duration.
 */
export function createAuditFlushMetrics(registry: Registry): (outcome: { size: number; ok: boolean }) => void {
  const batchSize = new Histogram({
    name: "subdata_audit_batch_size",
    help: "Audit records written per INSERT (group commit)",
    labelNames: ["outcome"] as const,
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500],
    registers: [registry],
  });
  const flushes = new Counter({
    name: "subdata_audit_flushes_total",
    help: "Audit batch INSERTs, by outcome (error: every read in the batch answered 503)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const records = new Counter({
    name: "subdata_audit_records_total",
    help: "Audit records, by outcome of their batch",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  for (const outcome of ["ok", "error"]) {
    flushes.inc({ outcome }, 0);
    records.inc({ outcome }, 0);
  }
  return ({ size, ok }) => {
    const outcome = ok ? "ok" : "error";
    batchSize.observe({ outcome }, size);
    flushes.inc({ outcome });
    records.inc({ outcome }, size);
  };
}

/** subdata_audit_refused_total: audit records refused by the writer's bounds (queue_full, deadline); each is a 503 at the gateway. */
export function createAuditRefusalMetric(registry: Registry): (reason: OverloadReason) => void {
  const refused = new Counter({
    name: "subdata_audit_refused_total",
    help: "Audit records refused by the writer's bounds, by reason (queue_full, deadline): each read answered 503",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  for (const reason of ["queue_full", "deadline"]) refused.inc({ reason }, 0);
  return (reason) => refused.inc({ reason });
}
