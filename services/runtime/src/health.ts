import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Health, HealthCheckResponse_ServingStatus as ServingStatus, HealthCheckResponseSchema } from "@subdata/proto/grpc/health/v1/health_pb";

/** The serving state a process reports; main.ts flips it to not-serving first thing on SIGTERM. */
export interface HealthState {
  readonly serving: boolean;
  setServing(serving: boolean): void;
  /** Resolves on the next change, for Watch. */
  changed(): Promise<void>;
}

export function createHealthState(): HealthState {
  let serving = true;
  let waiters: Array<() => void> = [];
  return {
    get serving() {
      return serving;
    },
    setServing(next) {
      if (next === serving) return;
      serving = next;
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    },
    changed() {
      return new Promise((resolve) => waiters.push(resolve));
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
      while (!context.signal.aborted) {
        yield create(HealthCheckResponseSchema, { status: status() });
        await Promise.race([state.changed(), new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }))]);
      }
    },
  };
}
