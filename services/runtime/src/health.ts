import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Health, HealthCheckResponse_ServingStatus as ServingStatus, HealthCheckResponseSchema } from "@subdata/proto/grpc/health/v1/health_pb";
import { env } from "./config.ts";

/** The serving state a process reports; main.ts flips it to not-serving first thing on SIGTERM. */
export interface HealthState {
  readonly serving: boolean;
  setServing(serving: boolean): void;
  /** Resolves on the next change, or when `signal` aborts (its waiter is then dropped), for Watch. */
  changed(signal?: AbortSignal): Promise<void>;
  /** A slot for one Watch stream (call the result when it ends), or undefined when maxWatches are open. */
  openWatch(): (() => void) | undefined;
  /** Watch streams open now. */
  readonly watches: number;
  /** changed() calls waiting now (each Watch has at most one). */
  readonly waiting: number;
}

/** SUBDATA_HEALTH_MAX_WATCHES, for the config shape of every process that serves grpc.health.v1. */
export const healthConfigShape = {
  /** grpc.health.v1.Health/Watch streams open at once (they need no credential); beyond, RESOURCE_EXHAUSTED. */
  SUBDATA_HEALTH_MAX_WATCHES: env.positiveInt(64),
};

export function createHealthState(options: { maxWatches?: number } = {}): HealthState {
  const maxWatches = options.maxWatches ?? 64;
  let serving = true;
  let watches = 0;
  const waiters = new Set<() => void>();
  return {
    get serving() {
      return serving;
    },
    get watches() {
      return watches;
    },
    get waiting() {
      return waiters.size;
    },
    setServing(next) {
      if (next === serving) return;
      serving = next;
      const woken = [...waiters];
      waiters.clear();
      for (const wake of woken) wake();
    },
    changed(signal) {
      return new Promise((resolve) => {
        if (signal?.aborted) return resolve();
        const wake = () => {
          waiters.delete(wake);
          signal?.removeEventListener("abort", wake);
          resolve();
        };
        waiters.add(wake);
        signal?.addEventListener("abort", wake, { once: true });
      });
    },
    openWatch() {
      if (watches >= maxWatches) return undefined;
      watches++;
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        watches--;
      };
    },
  };
}

/**
 * grpc.health.v1.Health for one process. `services` are the fully-qualified names this process serves;
 * "" asks about the process as a whole. Unknown names answer NOT_FOUND, as the protocol says.
 */
export function createHealthService(state: HealthState, services: readonly string[]): ServiceImpl<typeof Health> {
  const known = new Set(["", ...services]);
  const status = () => (state.serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  return {
    check(request) {
      if (!known.has(request.service)) throw new ConnectError(`unknown service ${request.service}`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status: status() });
    },
    async *watch(request, context) {
      if (!known.has(request.service)) {
        yield create(HealthCheckResponseSchema, { status: ServingStatus.SERVICE_UNKNOWN });
        return;
      }
      // Anyone may open a Watch (no credential): each holds a stream, so they are capped, and a
      // cancelled one leaves nothing behind (its waiter goes with its signal).
      const release = state.openWatch();
      if (!release) throw new ConnectError("too many health watches open on this process", Code.ResourceExhausted);
      try {
        while (!context.signal.aborted) {
          yield create(HealthCheckResponseSchema, { status: status() });
          await state.changed(context.signal);
        }
      } finally {
        release();
      }
    },
  };
}
