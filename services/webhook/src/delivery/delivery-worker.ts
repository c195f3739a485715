import type { KeyObject } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { SpanStatusCode } from "@opentelemetry/api";
import type { Logger, Pool, Tracing } from "@subdata/runtime";
import { createAttemptRecorder } from "./attempt-recorder.ts";
import type { AttemptResult, WebhookSender } from "./deliver-webhook.ts";
import { type ClaimedDelivery, type ClaimRepository, type ClaimResult, claimBatch, claimWindow } from "./claim-repository.ts";
import type { DeliveryDecision } from "./record-repository.ts";
import { endAttemptSpan, startAttemptSpan } from "./delivery-trace.ts";
import { createOpenedSecrets } from "./opened-secrets.ts";
import { nextAttempt } from "./retry-schedule.ts";
import type { SecretBox } from "../secret-box.ts";

/**
 * Sends due deliveries, up to `concurrency` POSTs at once. One claim loop keeps the slots full: it
 * claims up to as many rows as there are free slots (at most a window's worth per claim, claimWindow),
 * and claims again at once while the window came back full, and as soon as slots free up or recorded
 * attempts may have released later versions — while other POSTs are still in flight. A slot is freed
 * when its POST returns; the outcome goes to the attempt recorder (group commit) and the row keeps its
 * claim lease until that commits, so a crash between POST and record means another attempt.
 *
 * Per endpoint, a healthy receiver may hold `perEndpointConcurrency` deliveries in flight, one that
 * is failing (failing_since set) only `failingEndpointConcurrency`, and a merchant's endpoints
 * together `perMerchantConcurrency`: caps of the whole cluster, counted by the claim in the database
 * (claim-repository.ts). A receiver that hangs or stays down cannot take every slot, a merchant with
 * many slow receivers cannot either, and retries wait in the table (next_attempt_at), never in a worker.
 * The in-process counts below only decide when a claim is worth making.
 *
 * Claims come in batches: an endpoint is claimed for again only once half of its cap is free (or it
 * is idle), not after every POST that returns (a merchant likewise, counted by the claim), and the
 * claim's window of due rows is twice the free slots, at most one endpoint's cap (claimWindow). Free
 * as the claim counts it: a delivery holds its endpoint's room until its attempt is recorded, not only
 * until its POST returns. Counted from the POSTs alone, an endpoint would look claimable while the
 * database still counts its answered, unrecorded attempts in flight, and a busy endpoint would be
 * claimed for again and again, a few rows at a time, until the recorder caught up.
 * A claim costs ~5 ms of Postgres time whatever it claims plus ~0.2 ms per row (2-core box,
 * loaded), so refilling one slot at a time cost more database time per delivery than the delivery
 * itself; a fast receiver frees half of its slots within moments.
 *
 * A claim while some endpoints are at their cap skips their rows, and the due index cannot skip an
 * endpoint: it walks every due row of theirs, a whole backlog, to find the rows of the others. Once
 * such a claim found no other due row, claims that would skip at least those endpoints again are
 * held back until something may have made another endpoint's row due: new rows of another endpoint
 * (a wake names the endpoints of the rows it announces; one that names none counts for all), a
 * recorded attempt of another endpoint (it may release that endpoint's next version), or
 * `pollIntervalMs` after the empty claim (retries and leases coming due), never later. Otherwise every recorded batch
 * of a saturated receiver paid for that walk, to find nothing, about as often as the claims that do
 * the work.
 */

export interface DeliveryWorkerOptions {
  /** Where attempts are recorded (the attempt recorder's transactions). */
  pool: Pool;
  /** Which due deliveries to send next. */
  claims: ClaimRepository;
  secretBox: SecretBox;
  sender: WebhookSender;
  logger: Logger;
  concurrency: number;
  /** In-flight cap of a healthy endpoint. */
  perEndpointConcurrency: number;
  /** In-flight cap of a failing endpoint. */
  failingEndpointConcurrency: number;
  /** In-flight cap of a merchant, all its endpoints together (across replicas, counted by the claim). */
  perMerchantConcurrency: number;
  leaseMs: number;
  /** Fallback poll when nothing wakes the worker. */
  pollIntervalMs: number;
  retrySchedule: readonly number[];
  disableAfterMs: number;
  disableReason: string;
  random?: () => number;
  /** Each POST is a CLIENT span in its event's trace (delivery-trace.ts). */
  tracing: Tracing;
  /** Called after each attempt was recorded (metrics). */
  onAttempt?: (report: { errorClass: string; latencyMicros: bigint; outcome: DeliveryDecision["kind"]; endpointDisabled: boolean }) => void;
}

export interface DeliveryWorker {
  start(): void;
  /** Look for due deliveries now: new rows were inserted, for these endpoints (any, if undefined). */
  wake(endpointIds?: readonly string[]): void;
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
  const healthyCap = Math.max(1, options.perEndpointConcurrency);
  const failingCap = Math.max(1, Math.min(options.failingEndpointConcurrency, healthyCap));
  const merchantCap = Math.max(healthyCap, options.perMerchantConcurrency);
  /** Per endpoint, deliveries claimed and not yet recorded: this replica's part of what the claim counts. */
  const inFlight = new Map<string, number>();
  /** POSTs under way (the slots). */
  let posting = 0;
  const openedSecrets = createOpenedSecrets(options.secretBox);
  /** Whether a busy endpoint was failing at its last claim or attempt (selects its cap). */
  const failing = new Map<string, boolean>();
  const tasks = new Set<Promise<void>>();
  let stopping = false;
  let running: Promise<void> | undefined;
  /** Something happened that may have made rows claimable since the last claim. */
  let dirty = true;
  /** The last claim filled every free slot or hit its scan limit: more is probably due. */
  let moreDue = false;
  /** Something changed (a slot freed, a wake-up) since the loop last looked. */
  let woken = false;
  let signal: (() => void) | undefined;
  const stopped = new AbortController();
  /** The endpoints skipped by the last claim that found no other due row, and until when that holds. */
  let nothingBeyond: { endpointIds: ReadonlySet<string>; until: number } | undefined;
  /** The endpoints skipped by the claim in progress, and whether its snapshot may have missed something. */
  let claiming: { endpointIds: ReadonlySet<string>; missed: boolean } | undefined;
  /** Rows of endpoints other than these (of any endpoint, if undefined) may have become due. */
  const othersMayBeDue = (endpointIds?: readonly string[]) => {
    const beyond = (skipped: ReadonlySet<string>) => endpointIds === undefined || endpointIds.some((id) => !skipped.has(id));
    if (nothingBeyond && beyond(nothingBeyond.endpointIds)) nothingBeyond = undefined;
    if (claiming && beyond(claiming.endpointIds)) claiming.missed = true;
  };

  const wakeLoop = () => {
    woken = true;
    signal?.();
  };
  const notify = () => {
    dirty = true;
    wakeLoop();
  };

  const recorder = createAttemptRecorder({
    pool: options.pool,
    logger,
    disableAfterMs: options.disableAfterMs,
    disableReason: options.disableReason,
    // Finished heads release the next version of their resource: worth another claim.
    onFlushed: (attempts) => {
      for (const { delivery } of attempts) settle(delivery.endpointId);
      othersMayBeDue(attempts.map(({ delivery }) => delivery.endpointId));
      notify();
    },
  });

  const waitForSignal = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) return resolve();
      const timer = setTimeout(() => {
        othersMayBeDue();
        dirty = true;
        resolve();
      }, ms);
      signal = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      signal = undefined;
      woken = false;
    });

  function openSecrets(delivery: ClaimedDelivery): KeyObject[] {
    return openedSecrets.open(delivery.endpointId, delivery.secretCiphertext, delivery.previousSecretCiphertext);
  }

  const capOf = (endpointId: string) => (failing.get(endpointId) ? failingCap : healthyCap);
  /** Whether an endpoint with `count` in flight is worth a claim: a batch of its cap free, or idle. */
  const claimable = (endpointId: string, count: number) => count === 0 || capOf(endpointId) - count >= claimBatch(capOf(endpointId));

  /** A POST returned (or was never sent): its slot is free. */
  function release(): void {
    posting--;
    // A free slot matters to the claim loop only if rows are waiting.
    if (moreDue) dirty = true;
    wakeLoop();
  }

  /** The claim no longer counts a delivery in flight: its attempt was recorded, or never will be. */
  function settle(endpointId: string): void {
    const count = inFlight.get(endpointId) ?? 1;
    const left = count - 1;
    if (left > 0) inFlight.set(endpointId, left);
    else {
      inFlight.delete(endpointId);
      failing.delete(endpointId);
    }
    // Its rows were left out of the last claim: worth another one now.
    if (!claimable(endpointId, count) && claimable(endpointId, left)) dirty = true;
  }

  async function deliver(delivery: ClaimedDelivery): Promise<void> {
    // Each attempt is a span of the event's trace (the relay's), sent to the receiver and logged here.
    const { span, traceparent } = startAttemptSpan(options.tracing, delivery);
    const log = {
      deliveryId: delivery.id,
      endpointId: delivery.endpointId,
      eventId: delivery.eventId,
      attempt: delivery.attemptNumber,
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
    };
    let signingKeys: KeyObject[];
    try {
      signingKeys = openSecrets(delivery);
    } catch {
      // Wrong SUBDATA_WEBHOOK_SECRET_KEY or a damaged row: nothing can be signed. The lease expires
      // and the delivery is tried again once an operator fixes the key.
      settle(delivery.endpointId);
      release();
      span.setStatus({ code: SpanStatusCode.ERROR, message: "signing secret cannot be opened" });
      span.end();
      logger.error(log, "cannot open the endpoint's signing secret; delivery not sent");
      return;
    }
    let attempt: AttemptResult;
    try {
      attempt = await options.sender.send({
        eventId: delivery.eventId,
        url: delivery.url,
        body: delivery.body,
        signingKeys,
        traceparent,
      });
    } catch (error) {
      // No attempt reaches the recorder, whose flush would settle it: the delivery is retried after its lease.
      settle(delivery.endpointId);
      throw error;
    } finally {
      release();
    }
    endAttemptSpan(span, attempt);
    const decision = decide(attempt, delivery.attemptNumber, options.retrySchedule, options.random);
    if (inFlight.has(delivery.endpointId)) failing.set(delivery.endpointId, decision.kind !== "succeeded");
    const recorded = await recorder.add({ delivery, attempt, decision });
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
    posting++;
    failing.set(delivery.endpointId, delivery.endpointFailing);
    const task = deliver(delivery)
      .catch((error: unknown) => {
        // Recording failed (database down): the lease runs out and the delivery is retried.
        logger.error({ err: error, deliveryId: delivery.id }, "webhook delivery failed unexpectedly; it will be retried after its lease");
      })
      .finally(() => tasks.delete(task));
    tasks.add(task);
  }

  async function run(): Promise<void> {
    let errorBackoffMs = 0;
    while (!stopping) {
      // Outcomes waiting for the recorder count too: a slow database slows claiming, not memory.
      const free = options.concurrency - posting - Math.max(0, recorder.pending - options.concurrency);
      if (free > 0 && dirty) {
        dirty = false;
        try {
          const full = [...inFlight].filter(([endpointId, count]) => !claimable(endpointId, count)).map(([endpointId]) => endpointId);
          if (nothingBeyond && Date.now() < nothingBeyond.until && [...nothingBeyond.endpointIds].every((id) => full.includes(id))) continue;
          const window = claimWindow(free, healthyCap);
          const thisClaim = { endpointIds: new Set(full), missed: false };
          claiming = thisClaim;
          let result: ClaimResult;
          try {
            result = await options.claims.claimDue({
              limit: free,
              healthyCap,
              failingCap,
              merchantCap,
              fullEndpointIds: full,
              leaseMs: options.leaseMs,
              scanLimit: window,
            });
          } finally {
            // In the claim's own continuation: a signal after this line is seen by the hold, not the claim.
            claiming = undefined;
          }
          for (const delivery of result.claimed) launch(delivery);
          if (full.length > 0 && result.scanned === 0 && !thisClaim.missed) {
            nothingBeyond = { endpointIds: new Set(full), until: Date.now() + options.pollIntervalMs };
          }
          moreDue = result.claimed.length === free || result.scanned === window;
          // Rows were deferred or the scan was cut short: look again at once.
          if (result.scanned === window || result.deferred > 0) dirty = true;
          errorBackoffMs = 0;
        } catch (error) {
          dirty = true;
          errorBackoffMs = Math.min(Math.max(errorBackoffMs * 2, 500), 30_000);
          logger.warn({ err: error }, "claiming webhook deliveries failed; retrying");
          await sleep(errorBackoffMs, undefined, { signal: stopped.signal }).catch(() => {});
        }
        continue;
      }
      if (stopping) break;
      // A hold ends when its time is up even if flushes of the held endpoints were held back meanwhile
      // (each restarting a full poll would stretch it). The timer clears the hold, so a hold already
      // past its time gets one immediate claim, not a loop of zero-length waits.
      await waitForSignal(nothingBeyond ? Math.max(0, Math.min(options.pollIntervalMs, nothingBeyond.until - Date.now())) : options.pollIntervalMs);
    }
  }

  return {
    start() {
      if (running) return;
      running = run();
    },
    wake(endpointIds) {
      othersMayBeDue(endpointIds);
      notify();
    },
    async stop() {
      stopping = true;
      stopped.abort();
      notify();
      await running;
      await Promise.allSettled([...tasks]);
      await recorder.drain();
    },
  };
}
