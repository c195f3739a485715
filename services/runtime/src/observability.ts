import type { Registry } from "prom-client";
import { createLogger, type Logger } from "./logger.ts";
import { createMetrics, registerPoolMetrics, type PoolStats } from "./metrics.ts";
import { createTraceScope, type TraceScope } from "./trace-context.ts";

/** What every service's main.ts wires the same way: one logger, metrics registry and trace scope. */
export interface ProcessObservability {
  logger: Logger;
  metrics: Registry;
  trace: TraceScope;
}

export function createProcessObservability(options: { service: string; logLevel?: string; pool?: PoolStats }): ProcessObservability {
  const trace = createTraceScope();
  const logger = createLogger({ name: options.service, level: options.logLevel, context: trace.logFields });
  const metrics = createMetrics({ service: options.service });
  if (options.pool) registerPoolMetrics(metrics, options.pool);
  return { logger, metrics, trace };
}
