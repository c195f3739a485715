import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { attemptsOf, deliveryOf, newSubscriptionId, waitFor } from "./support/harness.ts";
import { webhookHeaders } from "./support/receiver.ts";

type WebhookBody = Record<string, unknown> & { data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> } };

describe("webhook delivery", () => {
  const h = useDeliveryHarness("delivery");
  const receiver = h.receiver;

  it("delivers a signed Standard Webhooks request that the library and a hand-written HMAC both verify", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver();
    const endpoint = await h.createEndpoint({ merchantId, url: `${r.origin}/hooks?src=subdata` });
    h.startPipeline();
    const subscriptionId = newSubscriptionId();
    const event = await h.publish({ merchantId, subscriptionId, version: 2 });

    await waitFor("the delivery", () => r.requests.length === 1);
    const request = r.requests[0]!;
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/hooks?src=subdata");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["user-agent"]).toMatch(/^subdata-webhooks\//);
    expect(request.headers["webhook-id"]).toBe(event.id);
    const timestamp = Number(request.headers["webhook-timestamp"]);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(300);

    const payload = new Webhook(endpoint.secret).verify(request.body, webhookHeaders(request)) as WebhookBody;
    expect(payload).toMatchObject({ id: event.id, type: "subscription.updated", data: { object: { id: subscriptionId, version: 2 } } });
    // As the feed renders it: the version travels as the event's own, not as a changed attribute.
    expect(payload.data.previous_attributes).toEqual({ status: "ACTIVE", quantity: 1, updated_at: "2026-01-01T00:00:01.000Z" });

    const key = Buffer.from(endpoint.secret.slice("whsec_".length), "base64");
    const expected = createHmac("sha256", key).update(`${event.id}.${timestamp}.${request.body}`).digest("base64");
    expect(request.headers["webhook-signature"]).toBe(`v1,${expected}`);

    const tampered = request.body.replace('"version":2', '"version":3');
    expect(tampered).not.toBe(request.body);
    expect(() => new Webhook(endpoint.secret).verify(tampered, webhookHeaders(request))).toThrow();

    const delivery = await waitFor("SUCCEEDED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "SUCCEEDED" ? d : undefined;
    });
    expect(delivery.delivered_at).not.toBeNull();
    const attempts = await attemptsOf(h.admin, delivery.id);
    expect(attempts).toMatchObject([{ attempt_number: 1, response_status: 200, error_class: "NONE", response_body: "ok" }]);
    // The stored body is exactly the bytes sent.
    const stored = await h.admin.query("SELECT body, type, version FROM webhook_events WHERE id = $1", [event.id]);
    expect(stored.rows[0]).toEqual({ body: request.body, type: "subscription.updated", version: 2n });
  });

  it("retries a failing receiver with the same webhook-id and body, logging every attempt", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver((_request, index) => (index < 2 ? { status: 500, body: `boom ${index}` } : { status: 204 }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    h.startPipeline({ retrySchedule: [0, 100, 100] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    const delivery = await waitFor("SUCCEEDED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "SUCCEEDED" ? d : undefined;
    });
    expect(r.requests).toHaveLength(3);
    expect(new Set(r.requests.map((q) => q.headers["webhook-id"]))).toEqual(new Set([event.id]));
    expect(new Set(r.requests.map((q) => q.body)).size).toBe(1);
    for (const request of r.requests) expect(new Webhook(endpoint.secret).verify(request.body, webhookHeaders(request))).toBeTruthy();
    expect(delivery.attempt_count).toBe(3);
    const attempts = await attemptsOf(h.admin, delivery.id);
    expect(attempts.map((a) => [a.attempt_number, a.response_status, a.error_class, a.response_body])).toEqual([
      [1, 500, "HTTP_STATUS", "boom 0"],
      [2, 500, "HTTP_STATUS", "boom 1"],
      [3, 204, "NONE", ""],
    ]);
  });

  it("marks a delivery FAILED after the last scheduled attempt and records the endpoint as failing", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver(() => ({ status: 503 }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    h.startPipeline({ retrySchedule: [0, 50] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    const delivery = await waitFor("FAILED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "FAILED" ? d : undefined;
    });
    expect(delivery.attempt_count).toBe(2);
    expect(r.requests).toHaveLength(2);
    const state = await h.admin.query("SELECT status, failing_since FROM webhook_endpoints WHERE id = $1", [endpoint.id]);
    expect(state.rows[0].status).toBe("ENABLED");
    expect(state.rows[0].failing_since).not.toBeNull();
  });

  it("signs with both secrets while a rotation's grace period runs, newest first", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver();
    const previousSecret = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
    const endpoint = await h.createEndpoint({
      merchantId,
      url: r.origin,
      previousSecret,
      previousExpiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const expired = await h.createEndpoint({
      merchantId,
      url: `${r.origin}/expired`,
      previousSecret,
      previousExpiresAt: new Date(Date.now() - 1_000).toISOString(),
    });
    h.startPipeline();
    await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    await waitFor("both deliveries", () => r.requests.length === 2);
    const rotating = r.requests.find((q) => q.url === "/")!;
    const entries = String(rotating.headers["webhook-signature"]).split(" ");
    expect(entries).toHaveLength(2);
    const timestamp = rotating.headers["webhook-timestamp"];
    const sign = (secret: string) =>
      `v1,${createHmac("sha256", Buffer.from(secret.slice(6), "base64"))
        .update(`${rotating.headers["webhook-id"]}.${timestamp}.${rotating.body}`)
        .digest("base64")}`;
    expect(entries).toEqual([sign(endpoint.secret), sign(previousSecret)]);
    expect(new Webhook(endpoint.secret).verify(rotating.body, webhookHeaders(rotating))).toBeTruthy();
    expect(new Webhook(previousSecret).verify(rotating.body, webhookHeaders(rotating))).toBeTruthy();

    const afterGrace = r.requests.find((q) => q.url === "/expired")!;
    expect(String(afterGrace.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(new Webhook(expired.secret).verify(afterGrace.body, webhookHeaders(afterGrace))).toBeTruthy();
    expect(() => new Webhook(previousSecret).verify(afterGrace.body, webhookHeaders(afterGrace))).toThrow();
  });

  it("stop() stops pulling but lets an in-flight delivery finish and be recorded", async () => {
    const merchantId = await h.fixtures.merchant();
    let release: (() => void) | undefined;
    const r = await receiver(() => new Promise((resolve) => (release = () => resolve({ status: 200 }))));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    const pipeline = h.startPipeline();
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("the request to be held", () => r.requests.length === 1);

    let stopped = false;
    const stopping = pipeline.stop().then(() => (stopped = true));
    expect((await deliveryOf(h.admin, endpoint.id, event.id))?.status).toBe("PENDING");
    expect(stopped).toBe(false);
    release!();
    await stopping;
    expect((await deliveryOf(h.admin, endpoint.id, event.id))?.status).toBe("SUCCEEDED");
  });
});
