import { CANCELLATION_REASONS, FAILURES } from "./catalog.ts";
import type { ChargeRow, ChargeStatus, SubscriptionRow, SubscriptionStatus } from "./rows.ts";
import type { SeedPlan } from "./plans.ts";
import { randomMicros, type SeedContext } from "./seed-context.ts";
import { addInterval, DAY_US, HOUR_US, MINUTE_US, nominalIntervalMicros, SECOND_US } from "./time.ts";

export interface SubscriptionInput {
  plan: SeedPlan;
  status: SubscriptionStatus;
  customerId: string;
  /** The previous subscription's created_at: sometimes reused, so keyset readers meet exact ties. */
  previousCreatedAt: number | null;
}

export interface SubscriptionHistory {
  subscription: SubscriptionRow;
  /** Oldest first; orders are made later from the paid ones. */
  charges: ChargeRow[];
}

const TRIAL_DAYS = [7, 14, 30] as const;
const TWO_YEARS = 730 * DAY_US;
/** Billing history is bounded so a daily plan does not make hundreds of charges. */
const MAX_CYCLES = 8;
const TIE_PROBABILITY = 0.03;
const FAILURE_CHOICES = FAILURES.map(([code, message, weight]) => [[code, message] as const, weight] as const);

type CycleOutcome = "SUCCEEDED" | "RETRIED" | "SKIPPED" | "REFUNDED" | "PARTIALLY_REFUNDED";
const PAST_CYCLE_OUTCOMES: readonly (readonly [CycleOutcome, number])[] = [
  ["SUCCEEDED", 78],
  ["RETRIED", 7],
  ["SKIPPED", 5],
  ["REFUNDED", 5],
  ["PARTIALLY_REFUNDED", 5],
];

/**
 * One subscription and its charges, consistent with its status:
 * - TRIALING: created within its trial; trial_ends_at (future) = current_period_end = next_charge_at.
 * - ACTIVE: the current cycle is paid; next_charge_at = current_period_end (future).
 * - PAST_DUE: the current cycle's charge failed; next_charge_at is the next retry (future).
 * - PAUSED / CANCELLED: paused_at / cancelled_at (+ reason) after the start; next_charge_at null;
 *   the current period is the one containing that moment; no charge after it.
 * - EXPIRED: a fixed term ended at current_period_end (past); next_charge_at null.
 * Every charge costs price × quantity; created_at ≤ processed_at ≤ now.
 */
export function generateSubscriptionHistory(context: SeedContext, input: SubscriptionInput): SubscriptionHistory {
  const { random, now } = context;
  const plan = input.plan.row;
  const period = nominalIntervalMicros(plan.interval, plan.intervalCount);
  const quantity = random.chance(0.85) ? 1 : random.int(2, 3);
  const subscriptionId = context.newId("sub");
  const base: Omit<SubscriptionRow, "currentPeriodStart" | "currentPeriodEnd" | "createdAt" | "updatedAt"> = {
    id: subscriptionId,
    merchantId: context.merchantId,
    customerId: input.customerId,
    planId: plan.id,
    status: input.status,
    priceMinor: plan.priceMinor,
    currency: plan.currency,
    quantity,
    nextChargeAt: null,
    trialEndsAt: null,
    pausedAt: null,
    cancelledAt: null,
    cancellationReason: null,
  };
  const amountMinor = plan.priceMinor * quantity;
  const charges: ChargeRow[] = [];
  const charge = (status: ChargeStatus, scheduledAt: number, processedAt: number | null, createdAt = scheduledAt): ChargeRow => {
    const row: ChargeRow = {
      id: context.newId("ch"),
      merchantId: context.merchantId,
      subscriptionId,
      status,
      amountMinor,
      amountRefundedMinor: 0,
      currency: plan.currency,
      orderId: null,
      failureCode: null,
      failureMessage: null,
      scheduledAt,
      processedAt,
      createdAt,
    };
    if (status === "FAILED") {
      const [code, message] = random.weighted(FAILURE_CHOICES);
      row.failureCode = code;
      row.failureMessage = message;
    } else if (status === "REFUNDED") {
      row.amountRefundedMinor = amountMinor;
    } else if (status === "PARTIALLY_REFUNDED") {
      row.amountRefundedMinor = random.int(1, amountMinor - 1);
    }
    charges.push(row);
    return row;
  };
  const pickCreatedAt = (minAge: number, maxAge: number): number => {
    const previous = input.previousCreatedAt;
    if (previous !== null && random.chance(TIE_PROBABILITY) && now - previous >= minAge && now - previous <= maxAge) {
      return previous;
    }
    return now - randomMicros(context, minAge, maxAge);
  };

  if (input.status === "TRIALING") {
    const trial = random.pick(TRIAL_DAYS) * DAY_US;
    const createdAt = pickCreatedAt(MINUTE_US, trial - HOUR_US);
    const trialEndsAt = createdAt + trial;
    if (random.chance(0.3)) charge("PENDING", trialEndsAt, null, createdAt + randomMicros(context, 0, now - createdAt));
    return {
      subscription: {
        ...base,
        trialEndsAt,
        nextChargeAt: trialEndsAt,
        currentPeriodStart: createdAt,
        currentPeriodEnd: trialEndsAt,
        createdAt,
        updatedAt: createdAt,
      },
      charges,
    };
  }

  const trial = random.chance(0.25) ? random.pick(TRIAL_DAYS) * DAY_US : 0;
  // EXPIRED needs at least two cycles behind it (a term of one or more cycles that already ended);
  // the margin covers calendar months longer than the nominal 30.4 days.
  const minAge = input.status === "EXPIRED" ? trial + 2 * period + 4 * DAY_US : trial + HOUR_US;
  const maxAge = Math.max(Math.min(TWO_YEARS, MAX_CYCLES * period), minAge + DAY_US);
  const createdAt = pickCreatedAt(minAge, maxAge);
  const anchor = createdAt + trial;
  const trialEndsAt = trial > 0 ? anchor : null;
  const cycleStart = (k: number): number => addInterval(anchor, plan.interval, plan.intervalCount * k);

  if (input.status === "CANCELLED" && trial > 0 && random.chance(0.3)) {
    // Cancelled during the trial: never billed.
    const cancelledAt = createdAt + randomMicros(context, HOUR_US, trial);
    return {
      subscription: {
        ...base,
        trialEndsAt,
        cancelledAt,
        cancellationReason: random.weighted(CANCELLATION_REASONS),
        currentPeriodStart: createdAt,
        currentPeriodEnd: anchor,
        createdAt,
        updatedAt: cancelledAt,
      },
      charges,
    };
  }

  // The moment billing stopped (or now): pause, cancellation, or the end of a fixed term.
  let cutoff = now;
  let lastCycle: number;
  if (input.status === "EXPIRED") {
    let cyclesBeforeNow = 1;
    while (cycleStart(cyclesBeforeNow) <= now) cyclesBeforeNow++;
    const term = random.int(1, Math.max(1, cyclesBeforeNow - 1));
    cutoff = cycleStart(term);
    lastCycle = term - 1;
  } else {
    if (input.status === "PAUSED" || input.status === "CANCELLED") cutoff = anchor + randomMicros(context, 0, now - anchor);
    lastCycle = 0;
    while (cycleStart(lastCycle + 1) <= cutoff) lastCycle++;
  }

  const retryDelay = Math.min(2 * DAY_US, Math.floor(period / 4));
  const processedAfter = (scheduledAt: number): number => Math.min(scheduledAt + randomMicros(context, 200_000, 90 * SECOND_US), cutoff);
  for (let k = 0; k <= lastCycle; k++) {
    const scheduledAt = cycleStart(k);
    const isCurrent = k === lastCycle;
    if (isCurrent && input.status === "PAST_DUE") {
      charge("FAILED", scheduledAt, processedAfter(scheduledAt));
      const retryAt = scheduledAt + retryDelay;
      if (retryAt < now - MINUTE_US && random.chance(0.5)) charge("FAILED", retryAt, processedAfter(retryAt));
      continue;
    }
    let outcome: CycleOutcome = isCurrent && input.status === "ACTIVE" ? (random.chance(0.9) ? "SUCCEEDED" : "RETRIED") : random.weighted(PAST_CYCLE_OUTCOMES);
    if (outcome === "RETRIED" && scheduledAt + retryDelay >= cutoff - MINUTE_US) outcome = "SUCCEEDED";
    if (outcome === "PARTIALLY_REFUNDED" && amountMinor < 2) outcome = "REFUNDED";
    switch (outcome) {
      case "SKIPPED":
        charge("SKIPPED", scheduledAt, null);
        break;
      case "RETRIED": {
        charge("FAILED", scheduledAt, processedAfter(scheduledAt));
        const retryAt = scheduledAt + retryDelay;
        charge("SUCCEEDED", retryAt, processedAfter(retryAt));
        break;
      }
      default:
        charge(outcome, scheduledAt, processedAfter(scheduledAt));
    }
  }

  const currentPeriodStart = cycleStart(lastCycle);
  const currentPeriodEnd = cycleStart(lastCycle + 1);
  const lastProcessed = charges.reduce((latest, c) => Math.max(latest, c.processedAt ?? c.createdAt), createdAt);
  const subscription: SubscriptionRow = { ...base, trialEndsAt, currentPeriodStart, currentPeriodEnd, createdAt, updatedAt: lastProcessed };
  switch (input.status) {
    case "ACTIVE":
      subscription.nextChargeAt = currentPeriodEnd;
      if (random.chance(0.35)) {
        // The upcoming charge, already scheduled.
        charge("PENDING", currentPeriodEnd, null, now - randomMicros(context, 0, Math.min(now - currentPeriodStart, DAY_US)));
      }
      break;
    case "PAST_DUE":
      subscription.nextChargeAt = now + randomMicros(context, HOUR_US, 3 * DAY_US);
      break;
    case "PAUSED":
      subscription.pausedAt = cutoff;
      subscription.updatedAt = cutoff;
      break;
    case "CANCELLED":
      subscription.cancelledAt = cutoff;
      subscription.cancellationReason = random.weighted(CANCELLATION_REASONS);
      subscription.updatedAt = cutoff;
      break;
    case "EXPIRED":
      subscription.updatedAt = cutoff;
      break;
  }
  return { subscription, charges };
}
