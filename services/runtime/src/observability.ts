import type { Registry } from "prom-client";
import { createLogger, type Logger } from "./logger.ts";
import { createMetrics, registerPoolMetrics, type PoolStats } from "./metrics.ts";
import { createTraceScope, type TraceScope } from "./trace-context.ts";
import { type Tracing, tracingFromEnv } from "./tracing.ts";

/** What every service's main.ts wires the same way: one logger, metrics registry, trace scope and tracer provider. */
export interface ProcessObservability {
  logger: Logger;
  metrics: Registry;
  trace: TraceScope;
  /** Spans always; exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) is set. */
  tracing: Tracing;
  /** Flushes exported spans; the last shutdown step. */
  close(): Promise<void>;
}

export function createProcessObservability(options: {
  service: string;
  logLevel?: string;
  pool?: PoolStats;
  /** Where OTEL_* variables are read (process.env in main.ts). */
  env?: NodeJS.ProcessEnv;
}): ProcessObservability {
  const trace = createTraceScope();
  const logger = createLogger({ name: options.service, level: options.logLevel, context: trace.logFields });
  const metrics = createMetrics({ service: options.service });
  if (options.pool) registerPoolMetrics(metrics, options.pool);
  const tracing = tracingFromEnv(options.env ?? {}, `subdata-${options.service}`, logger);
  return { logger, metrics, trace, tracing, close: () => tracing.shutdown() };
}
