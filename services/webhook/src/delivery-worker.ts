import type { Logger, Pool } from "@subdata/runtime";
import type { AttemptResult, WebhookSender } from "./deliver-webhook.ts";
import { type ClaimedDelivery, claimDueDeliveries, type DeliveryDecision, recordAttempt } from "./delivery-repository.ts";
import { nextAttempt } from "./retry-schedule.ts";
import type { SecretBox } from "./secret-box.ts";

/**
 * Claims due deliveries from Postgres and sends them, up to `concurrency` at once and at most
 * `perEndpointConcurrency` per endpoint, so a receiver that hangs for 15 s per request cannot occupy
 * every slot. Retries are rows with a future next_attempt_at, never waits inside a worker.
 */

export interface DeliveryWorkerOptions {
  pool: Pool;
  secretBox: SecretBox;
  sender: WebhookSender;
  logger: Logger;
  concurrency: number;
  perEndpointConcurrency: number;
  leaseMs: number;
  /** Fallback poll when nothing wakes the worker. */
  pollIntervalMs: number;
  retrySchedule: readonly number[];
  disableAfterMs: number;
  disableReason: string;
  random?: () => number;
  merchantIds?: readonly string[] | undefined;
  /** Called after each attempt was recorded (metrics). */
  onAttempt?: (report: { errorClass: string; latencyMicros: bigint; outcome: DeliveryDecision["kind"]; endpointDisabled: boolean }) => void;
}

export interface DeliveryWorker {
  start(): void;
  /** Look for due deliveries now (new rows were inserted). */
  wake(): void;
  /** Stops claiming, waits for in-flight deliveries to finish and be recorded. */
  stop(): Promise<void>;
}

export function decide(attempt: AttemptResult, attemptNumber: number, schedule: readonly number[], random?: () => number): DeliveryDecision {
  if (attempt.errorClass === "NONE") return { kind: "succeeded" };
  if (attempt.status === 410) return { kind: "gone" };
  const next = nextAttempt({ schedule, attemptsMade: attemptNumber, retryAfterMs: attempt.retryAfterMs, ...(random ? { random } : {}) });
  return next.kind === "exhausted" ? { kind: "failed" } : { kind: "retry", delayMs: next.delayMs };
}

export function createDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { logger } = options;
  const inFlight = new Map<string, number>();
  const tasks = new Set<Promise<void>>();
  let stopping = false;
  let running: Promise<void> | undefined;
  let signalled = false;
  let signal: (() => void) | undefined;

  const notify = () => {
    signalled = true;
    signal?.();
  };

  const waitForSignal = (ms: number) =>
    new Promise<void>((resolve) => {
      if (signalled) return resolve();
      const timer = setTimeout(resolve, ms);
      signal = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      signal = undefined;
      signalled = false;
    });

  function openSecrets(delivery: ClaimedDelivery): string[] {
    const secrets = [options.secretBox.open(delivery.secretCiphertext, delivery.endpointId)];
    if (delivery.previousSecretCiphertext) secrets.push(options.secretBox.open(delivery.previousSecretCiphertext, delivery.endpointId));
    return secrets;
  }

  async function deliver(delivery: ClaimedDelivery): Promise<void> {
    const log = { deliveryId: delivery.id, endpointId: delivery.endpointId, eventId: delivery.eventId, attempt: delivery.attemptNumber };
    let secrets: string[];
    try {
      secrets = openSecrets(delivery);
    } catch {
      // Wrong SUBDATA_WEBHOOK_SECRET_KEY or a damaged row: nothing can be signed. The lease expires
      // and the delivery is tried again once an operator fixes the key.
      logger.error(log, "cannot open the endpoint's signing secret; delivery not sent");
      return;
    }
    const attempt = await options.sender.send({ eventId: delivery.eventId, url: delivery.url, body: delivery.body, secrets });
    const decision = decide(attempt, delivery.attemptNumber, options.retrySchedule, options.random);
    const recorded = await recordAttempt(options.pool, {
      delivery,
      attempt,
      decision,
      disableAfterMs: options.disableAfterMs,
      disableReason: options.disableReason,
    });
    logger.info(
      {
        ...log,
        status: attempt.status,
        errorClass: attempt.errorClass,
        latencyMicros: Number(attempt.latencyMicros),
        outcome: decision.kind,
        ...(decision.kind === "retry" ? { retryInMs: decision.delayMs } : {}),
        ...(attempt.errorMessage ? { error: attempt.errorMessage } : {}),
      },
      "webhook attempt",
    );
    options.onAttempt?.({
      errorClass: attempt.errorClass,
      latencyMicros: attempt.latencyMicros,
      outcome: decision.kind,
      endpointDisabled: recorded.disabledReason !== null,
    });
    if (recorded.disabledReason) logger.warn({ endpointId: delivery.endpointId, reason: recorded.disabledReason }, "webhook endpoint disabled");
  }

  function launch(delivery: ClaimedDelivery): void {
    inFlight.set(delivery.endpointId, (inFlight.get(delivery.endpointId) ?? 0) + 1);
    const task = deliver(delivery)
      .catch((error: unknown) => {
        // Recording failed (database down): the lease runs out and the delivery is retried.
        logger.error({ err: error, deliveryId: delivery.id }, "webhook delivery failed unexpectedly; it will be retried after its lease");
      })
      .finally(() => {
        const left = (inFlight.get(delivery.endpointId) ?? 1) - 1;
        if (left > 0) inFlight.set(delivery.endpointId, left);
        else inFlight.delete(delivery.endpointId);
        tasks.delete(task);
        notify();
      });
    tasks.add(task);
  }

  async function run(): Promise<void> {
    let errorBackoffMs = 0;
    while (!stopping) {
      const free = options.concurrency - tasks.size;
      let claimedAll = false;
      if (free > 0) {
        try {
          const claimed = await claimDueDeliveries(options.pool, {
            limit: free,
            perEndpointCap: options.perEndpointConcurrency,
            inFlight,
            leaseMs: options.leaseMs,
            merchantIds: options.merchantIds,
          });
          for (const delivery of claimed) launch(delivery);
          claimedAll = claimed.length === free;
          errorBackoffMs = 0;
        } catch (error) {
          errorBackoffMs = Math.min(Math.max(errorBackoffMs * 2, 500), 30_000);
          logger.warn({ err: error }, "claiming webhook deliveries failed; retrying");
        }
      }
      if (stopping) break;
      // Full batch: more may be due, look again as soon as a slot frees (tasks signal on completion).
      if (claimedAll) continue;
      await waitForSignal(errorBackoffMs || options.pollIntervalMs);
    }
  }

  return {
    start() {
      if (running) return;
      running = run();
    },
    wake: notify,
    async stop() {
      stopping = true;
      notify();
      await running;
      await Promise.allSettled([...tasks]);
    },
  };
}
