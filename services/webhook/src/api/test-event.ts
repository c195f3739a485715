import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { MoneySchema } from "@subdata/proto/subdata/common/v1/money_pb";
import { PlanInterval, SubscriptionSchema, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { dateToTimestamp, previousAttributes, renderSubscription } from "@subdata/runtime";
import { TEST_SUBSCRIPTION_PREFIX } from "./delivery-schedule-repository.ts";

const TEST_EVENT_TYPE = "subscription.updated";
const TEST_EVENT_VERSION = 2n;

export interface TestEvent {
  resourceId: string;
  type: string;
  version: bigint;
  occurredAt: string;
  /** The exact JSON body sent. */
  body: string;
}

const DAY_MS = 86_400_000;

/**
 * A synthetic subscription.updated event, shaped exactly like a real one (a trialing subscription that
 * became active) so receivers exercise their real code path. It is marked twice: the top-level field
 * `"test": true`, which real events never carry, and a subscription id starting "sub_test_" that no real
 * subscription has (real ids are "sub_" + hex). The ids inside are made up and exist nowhere.
 */
export function buildTestEvent(eventId: string, now: Date): TestEvent {
  const tag = randomBytes(12).toString("hex");
  const subscriptionId = `${TEST_SUBSCRIPTION_PREFIX}${tag}`;
  const at = (offsetDays: number) => dateToTimestamp(new Date(now.getTime() + offsetDays * DAY_MS));
  const common = {
    id: subscriptionId,
    customer: { id: `cus_test_${tag}`, email: "jane.doe@example.com", name: "Jane Doe" },
    plan: { id: `plan_test_${tag}`, name: "Coffee of the month", interval: PlanInterval.MONTH, intervalCount: 1 },
    price: create(MoneySchema, { amountMinor: 1999n, currencyCode: "USD" }),
    quantity: 1,
    createdAt: at(-14),
  };
  const previous = create(SubscriptionSchema, {
    ...common,
    status: SubscriptionStatus.TRIALING,
    currentPeriodStart: at(-14),
    currentPeriodEnd: at(0),
    nextChargeAt: at(0),
    trialEndsAt: at(0),
    updatedAt: at(-14),
    version: TEST_EVENT_VERSION - 1n,
  });
  const current = create(SubscriptionSchema, {
    ...common,
    status: SubscriptionStatus.ACTIVE,
    currentPeriodStart: at(0),
    currentPeriodEnd: at(30),
    nextChargeAt: at(30),
    trialEndsAt: at(0),
    updatedAt: at(0),
    version: TEST_EVENT_VERSION,
  });
  const timestamp = now.toISOString();
  const body = {
    id: eventId,
    type: TEST_EVENT_TYPE,
    timestamp,
    data: {
      object: renderSubscription(current),
      previous_attributes: previousAttributes(renderSubscription(previous), [
        "status",
        "current_period_start",
        "current_period_end",
        "next_charge_at",
        "updated_at",
      ]),
    },
    test: true,
  };
  return { resourceId: subscriptionId, type: TEST_EVENT_TYPE, version: TEST_EVENT_VERSION, occurredAt: timestamp, body: JSON.stringify(body) };
}
