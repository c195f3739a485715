import { Code } from "@connectrpc/connect";
import { ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import { ChargeStatus, PlanInterval, SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { GetSubscriptionResponseSchema } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { errorDetailOf } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { useQueryHarness } from "../support/query-server.ts";
import { errorShape, expectEveryMoneyHasCurrency, rpcError } from "./assertions.ts";

describe("GetSubscription", () => {
  const harness = useQueryHarness();

  it("returns the subscription with every charge, oldest first, ties broken by id", async () => {
    const merchantId = await harness.fixtures.merchant();
    const planId = await harness.fixtures.plan(merchantId, { interval: "YEAR", intervalCount: 1, priceMinor: 1500, currency: "JPY" });
    const subscription = await harness.fixtures.subscription({ merchantId, planId, priceMinor: 1500, currency: "JPY", status: "PAST_DUE" });
    const base = { merchantId, subscriptionId: subscription.id, currency: "JPY", amountMinor: 1500 };
    const late = await harness.fixtures.charge({
      ...base,
      status: "FAILED",
      failureCode: "card_declined",
      failureMessage: "Declined",
      createdAt: "2026-02-01 00:00:00.000002+00",
    });
    const tied = [
      await harness.fixtures.charge({ ...base, status: "SUCCEEDED", processedAt: "2026-01-01 00:00:01+00", createdAt: "2026-01-01 00:00:00.000001+00" }),
      await harness.fixtures.charge({ ...base, status: "PARTIALLY_REFUNDED", amountRefundedMinor: 500, createdAt: "2026-01-01 00:00:00.000001+00" }),
      await harness.fixtures.charge({ ...base, status: "PENDING", createdAt: "2026-01-01 00:00:00.000001+00" }),
    ].sort();
    // Another subscription's and another merchant's charges stay out.
    const sibling = await harness.fixtures.subscription({ merchantId });
    await harness.fixtures.charge({ merchantId, subscriptionId: sibling.id });

    const response = await harness.query.subscriptions.getSubscription({ merchantId, subscriptionId: subscription.id });
    expect(response.subscription).toMatchObject({
      id: subscription.id,
      merchantId,
      status: SubscriptionStatus.PAST_DUE,
      plan: { id: planId, interval: PlanInterval.YEAR, intervalCount: 1 },
      price: { amountMinor: 1500n, currencyCode: "JPY" },
    });
    expect(response.charges.map((charge) => charge.id)).toEqual([...tied, late]);
    const failed = response.charges[3]!;
    expect(failed).toMatchObject({
      subscriptionId: subscription.id,
      status: ChargeStatus.FAILED,
      failureCode: "card_declined",
      failureMessage: "Declined",
      amount: { amountMinor: 1500n, currencyCode: "JPY" },
      amountRefunded: { amountMinor: 0n, currencyCode: "JPY" },
    });
    expect(failed.createdAt).toMatchObject({ nanos: 2_000 });
    expect(failed.processedAt).toBeUndefined();
    expect(failed.orderId).toBeUndefined();
    const refunded = response.charges.find((charge) => charge.status === ChargeStatus.PARTIALLY_REFUNDED)!;
    expect(refunded.amountRefunded).toMatchObject({ amountMinor: 500n, currencyCode: "JPY" });
    expect(expectEveryMoneyHasCurrency(GetSubscriptionResponseSchema, response)).toBe(1 + 4 * 2);
  });

  it("returns KWD amounts with their three minor digits intact", async () => {
    const merchantId = await harness.fixtures.merchant();
    const subscription = await harness.fixtures.subscription({ merchantId, priceMinor: 1250, currency: "KWD" });
    await harness.fixtures.charge({ merchantId, subscriptionId: subscription.id, amountMinor: 2501, currency: "KWD" });
    const response = await harness.query.subscriptions.getSubscription({ merchantId, subscriptionId: subscription.id });
    expect(response.subscription?.price).toMatchObject({ amountMinor: 1250n, currencyCode: "KWD" });
    expect(response.charges[0]?.amount).toMatchObject({ amountMinor: 2501n, currencyCode: "KWD" });
  });

  it("returns an empty charge list for a subscription without charges", async () => {
    const merchantId = await harness.fixtures.merchant();
    const subscription = await harness.fixtures.subscription({ merchantId });
    const response = await harness.query.subscriptions.getSubscription({ merchantId, subscriptionId: subscription.id });
    expect(response.charges).toEqual([]);
  });

  it("answers another merchant's subscription exactly like an unknown one", async () => {
    const mine = await harness.fixtures.merchant();
    const theirs = await harness.fixtures.merchant();
    const foreign = await harness.fixtures.subscription({ merchantId: theirs });
    const unknownId = `sub_${"0".repeat(32)}`;

    const foreignError = await rpcError(harness.query.subscriptions.getSubscription({ merchantId: mine, subscriptionId: foreign.id }));
    const unknownError = await rpcError(harness.query.subscriptions.getSubscription({ merchantId: mine, subscriptionId: unknownId }));
    const malformedError = await rpcError(harness.query.subscriptions.getSubscription({ merchantId: mine, subscriptionId: "ord_123' OR 1=1" }));
    expect(errorShape(foreignError)).toEqual({ code: Code.NotFound, message: "subscription not found", reason: ErrorReason.NOT_FOUND });
    expect(errorShape(unknownError)).toEqual(errorShape(foreignError));
    expect(errorShape(malformedError)).toEqual(errorShape(foreignError));
    expect(foreignError.metadata.get("content-length")).toBe(unknownError.metadata.get("content-length"));
  });

  it.each([
    ["merchant_id", { merchantId: "", subscriptionId: "sub_abc" }],
    ["subscription_id", { merchantId: "mer_abc", subscriptionId: "" }],
  ])("refuses a missing %s with INVALID_ARGUMENT", async (field, request) => {
    const error = await rpcError(harness.query.subscriptions.getSubscription(request));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(errorDetailOf(error)?.fieldViolations[0]?.field).toBe(field);
  });
});
