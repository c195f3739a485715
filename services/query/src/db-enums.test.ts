import { OrderStatus } from "@subdata/proto/subdata/order/v1/order_pb";
import { ChargeStatus, PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { describe, expect, it } from "vitest";
import { chargeStatusFromDb, orderStatusFromDb, planIntervalFromDb, subscriptionStatusFromDb, subscriptionStatusToDb } from "./db-enums.ts";

describe("database enum mapping", () => {
  it("maps every database label to the proto value of the same name", () => {
    expect(subscriptionStatusFromDb("PAST_DUE")).toBe(SubscriptionStatus.PAST_DUE);
    expect(planIntervalFromDb("MONTH")).toBe(PlanInterval.MONTH);
    expect(chargeStatusFromDb("PARTIALLY_REFUNDED")).toBe(ChargeStatus.PARTIALLY_REFUNDED);
    expect(orderStatusFromDb("PAID")).toBe(OrderStatus.PAID);
  });

  it("throws on a label it does not know, or an inherited property name", () => {
    expect(() => subscriptionStatusFromDb("ARCHIVED")).toThrow(/subscription_status/);
    expect(() => orderStatusFromDb("toString")).toThrow(/order_status/);
  });

  it("turns a status filter into its label, UNSPECIFIED into null and an undefined number into undefined", () => {
    expect(subscriptionStatusToDb(SubscriptionStatus.CANCELLED)).toBe("CANCELLED");
    expect(subscriptionStatusToDb(SubscriptionStatus.UNSPECIFIED)).toBeNull();
    expect(subscriptionStatusToDb(42 as SubscriptionStatus)).toBeUndefined();
  });

  it("round-trips every subscription status", () => {
    for (const label of ["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"]) {
      expect(subscriptionStatusToDb(subscriptionStatusFromDb(label))).toBe(label);
    }
  });
});
