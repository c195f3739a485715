import type { Logger } from "./logger.ts";

export interface ShutdownOptions {
  logger: Logger;
  /** Run in order on SIGTERM/SIGINT: typically readiness off, stop intake, drain, close pools. */
  steps: ReadonlyArray<{ name: string; run: () => Promise<void> | void }>;
  /** Exit non-zero if draining takes longer than this (keep it under terminationGracePeriodSeconds). */
  timeoutMs?: number;
}

/**
 * Installs SIGTERM/SIGINT handlers that run the shutdown steps once, then exit 0 (1 if a step failed or
 * the deadline passed). A second signal exits at once.
 */
export function handleShutdown(options: ShutdownOptions): void {
  let shuttingDown = false;
  const onSignal = async (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      options.logger.warn({ signal }, "second signal, exiting now");
      process.exit(1);
    }
    shuttingDown = true;
    options.logger.info({ signal }, "shutting down");
    const deadline = setTimeout(() => {
      options.logger.error("shutdown deadline passed, exiting");
      process.exit(1);
    }, options.timeoutMs ?? 25_000);
    deadline.unref();
    let failed = false;
    for (const step of options.steps) {
      try {
        await step.run();
      } catch (error) {
        failed = true;
        options.logger.error({ err: error, step: step.name }, "shutdown step failed");
      }
    }
    options.logger.info("stopped");
    process.exit(failed ? 1 : 0);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
