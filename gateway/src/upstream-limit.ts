import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * Bounds the unary calls in flight through one upstream transport; the rest wait their turn, first
 * come first served.
 *
 * Why: without a bound, every open client connection has a call in flight, and the upstream and
 * this process share their CPU among all of them, so they all finish late and together. When that
 * passes the call deadline, every call times out after its work was done and nothing is served
 * (a 200-row page at 64 connections did exactly that). With a bound, admitted calls finish in a
 * fraction of the time, and a call that waits past its deadline gives up before costing the
 * upstream anything.
 *
 * The queue is bounded too (`maxWaiting`, SUBDATA_QUERY_QUEUE_MAX): a call beyond it fails at once with
 * RESOURCE_EXHAUSTED (the gateway answers 503) instead of holding its request in memory; a waiting call
 * already gives up at its deadline or when its caller goes away.
 *
 * Only for unary calls: the slot is released when the response message has arrived. `onAdmitted`
 * gets each call's wait for its slot in seconds (0 when one was free), for the queue metric.
 */
export function limitConcurrency(maxInFlight: number, onAdmitted?: (waitSeconds: number) => void, maxWaiting = Number.POSITIVE_INFINITY): Interceptor {
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new Error(`maxInFlight must be a positive integer, got ${maxInFlight}`);
  let inFlight = 0;
  // Each waiter is handed a slot directly by release(), so inFlight never dips while calls wait.
  const waiting = new Set<() => void>();

  const release = () => {
    const [next] = waiting;
    if (next) {
      waiting.delete(next);
      next();
    } else {
      inFlight--;
    }
  };

  const waitForSlot = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(ConnectError.from(signal.reason, Code.Canceled));
      const admit = () => {
        signal.removeEventListener("abort", abandon);
        resolve();
      };
      const abandon = () => {
        waiting.delete(admit);
        reject(ConnectError.from(signal.reason, Code.Canceled));
      };
      signal.addEventListener("abort", abandon, { once: true });
      waiting.add(admit);
    });

  return (next) => async (request) => {
    if (inFlight < maxInFlight) {
      inFlight++;
      onAdmitted?.(0);
    } else {
      if (waiting.size >= maxWaiting) throw new ConnectError("too many upstream calls waiting in this gateway", Code.ResourceExhausted);
      const queuedAt = performance.now();
      await waitForSlot(request.signal);
      onAdmitted?.((performance.now() - queuedAt) / 1000);
    }
    try {
      return await next(request);
    } finally {
      release();
    }
  };
}
