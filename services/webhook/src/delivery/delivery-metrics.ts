import { Counter, Histogram, type Registry } from "@subdata/runtime";

/** What the delivery worker reports after recording each attempt (the DeliveryPipeline onAttempt hook). */
export interface AttemptReport {
  /** NONE, HTTP_STATUS, TIMEOUT, CONNECTION, … (AttemptErrorClass). */
  errorClass: string;
  latencyMicros: bigint;
  /** What was decided: succeeded | retry | failed | gone. */
  outcome: string;
  /** This attempt disabled its endpoint (auto-disable after failing too long). */
  endpointDisabled: boolean;
}

const FINAL_OUTCOMES = new Set(["succeeded", "failed", "gone"]);

/**
 * Webhook delivery metrics: subdata_webhook_attempts_total{outcome, error_class},
 * subdata_webhook_deliveries_total{outcome} (deliveries that reached a final state),
 * subdata_webhook_attempt_duration_seconds{error_class} and subdata_webhook_endpoints_disabled_total.
 */
export function createDeliveryMetrics(registry: Registry): (report: AttemptReport) => void {
  const attempts = new Counter({
    name: "subdata_webhook_attempts_total",
    help: "Webhook POST attempts, by decision (succeeded, retry, failed, gone) and error class",
    labelNames: ["outcome", "error_class"] as const,
    registers: [registry],
  });
  const deliveries = new Counter({
    name: "subdata_webhook_deliveries_total",
    help: "Deliveries that reached a final state, by outcome (succeeded, failed, gone)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "subdata_webhook_attempt_duration_seconds",
    help: "Time from connecting to the receiver to the end of its response (or the error)",
    labelNames: ["error_class"] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [registry],
  });
  const disabled = new Counter({
    name: "subdata_webhook_endpoints_disabled_total",
    help: "Endpoints disabled automatically after failing for SUBDATA_WEBHOOK_DISABLE_AFTER",
    registers: [registry],
  });
  // Zero series up front, so rate() and alerts work before the first failure.
  for (const outcome of FINAL_OUTCOMES) deliveries.inc({ outcome }, 0);
  disabled.inc(0);
  return (report) => {
    attempts.inc({ outcome: report.outcome, error_class: report.errorClass });
    if (FINAL_OUTCOMES.has(report.outcome)) deliveries.inc({ outcome: report.outcome });
    duration.observe({ error_class: report.errorClass }, Number(report.latencyMicros) / 1e6);
    if (report.endpointDisabled) disabled.inc();
  };
}
