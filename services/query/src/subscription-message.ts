import { create } from "@bufbuild/protobuf";
import { pgTimestampToProto, pgTimestampToProtoOrUndefined } from "@subdata/runtime";
import { type Charge, ChargeSchema, type Subscription, SubscriptionSchema } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { chargeStatusFromDb, planIntervalFromDb, subscriptionStatusFromDb } from "./db-enums.ts";
import { money } from "./money.ts";
import type { ChargeRow, SubscriptionRow } from "./subscription-repository.ts";

/** The joined customer and plan columns, refusing a row whose customer or plan is another merchant's. */
export function requireOwnCustomerAndPlan(row: SubscriptionRow) {
  if (row.customer_email === null || row.customer_name === null) {
    throw new Error(`subscription ${row.id} references a customer of another merchant`);
  }
  if (row.plan_name === null || row.plan_interval === null || row.plan_interval_count === null) {
    throw new Error(`subscription ${row.id} references a plan of another merchant`);
  }
  return {
    customerEmail: row.customer_email,
    customerName: row.customer_name,
    planName: row.plan_name,
    planInterval: row.plan_interval,
    planIntervalCount: row.plan_interval_count,
  };
}

/** A subscription row (with its customer and plan) as the proto message. */
export function subscriptionMessage(row: SubscriptionRow): Subscription {
  const joined = requireOwnCustomerAndPlan(row);
  return create(SubscriptionSchema, {
    id: row.id,
    merchantId: row.merchant_id,
    status: subscriptionStatusFromDb(row.status),
    customer: { id: row.customer_id, email: joined.customerEmail, name: joined.customerName },
    plan: {
      id: row.plan_id,
      name: joined.planName,
      interval: planIntervalFromDb(joined.planInterval),
      intervalCount: joined.planIntervalCount,
    },
    price: money(row.price_minor, row.currency),
    quantity: row.quantity,
    currentPeriodStart: pgTimestampToProto(row.current_period_start),
    currentPeriodEnd: pgTimestampToProto(row.current_period_end),
    nextChargeAt: pgTimestampToProtoOrUndefined(row.next_charge_at),
    trialEndsAt: pgTimestampToProtoOrUndefined(row.trial_ends_at),
    pausedAt: pgTimestampToProtoOrUndefined(row.paused_at),
    cancelledAt: pgTimestampToProtoOrUndefined(row.cancelled_at),
    cancellationReason: row.cancellation_reason ?? undefined,
    createdAt: pgTimestampToProto(row.created_at),
    updatedAt: pgTimestampToProto(row.updated_at),
    version: row.version,
  });
}

/** A charge (bigints as text) as the proto message. */
export function chargeMessage(row: ChargeRow): Charge {
  return create(ChargeSchema, {
    id: row.id,
    subscriptionId: row.subscription_id,
    status: chargeStatusFromDb(row.status),
    amount: money(BigInt(row.amount_minor), row.currency),
    amountRefunded: money(BigInt(row.amount_refunded_minor), row.currency),
    orderId: row.order_id ?? undefined,
    failureCode: row.failure_code ?? undefined,
    failureMessage: row.failure_message ?? undefined,
    scheduledAt: pgTimestampToProto(row.scheduled_at),
    processedAt: pgTimestampToProtoOrUndefined(row.processed_at),
    createdAt: pgTimestampToProto(row.created_at),
    version: BigInt(row.version),
  });
}
