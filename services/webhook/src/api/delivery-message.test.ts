import { AttemptErrorClass, DeliveryStatus } from "@subdata/proto/subdata/webhook/v1/delivery_pb";
import { describe, expect, it } from "vitest";
import { attemptErrorClassOf, attemptMessage, deliveryStatusFilter } from "./delivery-message.ts";

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
