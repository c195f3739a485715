import { describe, expect, it } from "vitest";
import { buildTestEvent } from "./test-event.ts";

type WebhookBody = Record<string, unknown> & { data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> } };

describe("test event", () => {
  const now = new Date("2026-11-22T10:00:00.123Z");
  const event = buildTestEvent("evt_0123456789abcdef0123456789abcdef", now);
  const body = JSON.parse(event.body) as WebhookBody;

  it("is a subscription.updated body shaped like a real one, marked as a test", () => {
    expect(Object.keys(body)).toEqual(["id", "type", "timestamp", "data", "test"]);
    expect(body).toMatchObject({ id: "evt_0123456789abcdef0123456789abcdef", type: "subscription.updated", timestamp: "2026-11-22T10:00:00.123Z", test: true });
    expect(body.data.object).toMatchObject({ object: "subscription", status: "ACTIVE", version: 2, price: { amount: "19.99", currency: "USD" } });
    // Like a real update's, the previous attributes never list version.
    expect(body.data.previous_attributes).toMatchObject({ status: "TRIALING" });
    expect(body.data.previous_attributes).not.toHaveProperty("version");
  });

  it("uses a subscription id no real subscription can have", () => {
    expect(event.resourceId).toMatch(/^sub_test_[0-9a-f]{24}$/);
    expect(body.data.object.id).toBe(event.resourceId);
    expect(event.occurredAt).toBe(body.timestamp);
  });
});
