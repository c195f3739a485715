import { AttemptErrorClass, DeliveryStatus } from "@subdata/proto/subdata/webhook/v1/delivery_pb";
import { describe, expect, it } from "vitest";
import { attemptErrorClassOf, attemptMessage, deliveryMessage, deliveryStatusFilter } from "./delivery-message.ts";

describe("delivery messages", () => {
  it("reads error classes however they are spelled, unknown ones as UNSPECIFIED", () => {
    expect(attemptErrorClassOf("HTTP_STATUS")).toBe(AttemptErrorClass.HTTP_STATUS);
    expect(attemptErrorClassOf("timeout")).toBe(AttemptErrorClass.TIMEOUT);
    expect(attemptErrorClassOf("ATTEMPT_ERROR_CLASS_BLOCKED_ADDRESS")).toBe(AttemptErrorClass.BLOCKED_ADDRESS);
    expect(attemptErrorClassOf("martian")).toBe(AttemptErrorClass.UNSPECIFIED);
  });

  it("maps status filters: UNSPECIFIED is all, unknown values are refused", () => {
    expect(deliveryStatusFilter(DeliveryStatus.UNSPECIFIED)).toBeNull();
    expect(deliveryStatusFilter(DeliveryStatus.FAILED)).toBe("FAILED");
    expect(deliveryStatusFilter(42 as DeliveryStatus)).toBeUndefined();
  });

  it("names the resource of every delivery, and fills subscription_id for subscription events only", () => {
    const row = {
      id: "whd_1",
      endpoint_id: "we_1",
      event_id: "evt_1",
      event_type: "charge.updated",
      resource_id: "ch_1",
      version: 2n,
      status: "PENDING" as const,
      attempt_count: 0,
      next_attempt_at: "2026-11-22 10:00:00+00",
      last_attempt_at: null,
      delivered_at: null,
      created_at: "2026-11-22 10:00:00+00",
    };
    expect(deliveryMessage(row)).toMatchObject({ resourceId: "ch_1", subscriptionId: "", version: 2n });
    expect(deliveryMessage({ ...row, event_type: "subscription.updated", resource_id: "sub_1" })).toMatchObject({
      resourceId: "sub_1",
      subscriptionId: "sub_1",
    });
  });

  it("turns latency microseconds into a Duration and a missing status into 0", () => {
    const attempt = attemptMessage({
      id: "wha_1",
      delivery_id: "whd_1",
      attempt_number: 1,
      started_at: "2026-11-22 10:00:00.000001+00",
      latency_micros: 2_500_001n,
      response_status: null,
      error_class: "CONNECTION",
      response_body: "",
    });
    expect(attempt.latency).toMatchObject({ seconds: 2n, nanos: 500_001_000 });
    expect(attempt.responseStatus).toBe(0);
    expect(attempt.startedAt).toMatchObject({ nanos: 1000 });
  });
});
