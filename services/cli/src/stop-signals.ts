import { constants } from "node:os";

/** Why the CLI stopped before its command finished: a signal asked it to. */
export class StopRequested extends Error {
  /** 128 + the signal's number, the status a shell reports for a process the signal ended (143 for SIGTERM). */
  readonly exitStatus: number;

  constructor(readonly signalName: NodeJS.Signals) {
    super(`stopped by ${signalName}`);
    this.name = "StopRequested";
    this.exitStatus = 128 + (constants.signals[signalName] ?? 0);
  }
}

/**
 * SIGTERM and SIGINT abort the returned signal: commands stop at their next safe point (a mirror page,
 * a maintenance batch) or have their database connection closed, which rolls back the open transaction
 * and frees its locks. The migrate Job runs the CLI as PID 1, where Node has no default handler and a
 * SIGTERM that nobody handles is ignored until the kubelet's SIGKILL. A second signal exits at once.
 */
export function abortOnStopSignals(target: NodeJS.Process): AbortSignal {
  const controller = new AbortController();
  const onSignal = (signalName: NodeJS.Signals) => {
    if (controller.signal.aborted) target.exit(new StopRequested(signalName).exitStatus);
    controller.abort(new StopRequested(signalName));
  };
  target.on("SIGTERM", onSignal);
  target.on("SIGINT", onSignal);
  return controller.signal;
}
