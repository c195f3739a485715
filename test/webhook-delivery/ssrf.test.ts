import { beforeAll, describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { attemptsOf, deliveryOf, newSubscriptionId, waitFor } from "./support/harness.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

describe("SSRF protection", () => {
  const h = useDeliveryHarness("ssrf");
  let r: Receiver;

  beforeAll(async () => {
    r = await h.receiver();
  });

  it("with private targets not allowed, refuses loopback at connect time, by address or by a name resolving to it", async () => {
    const merchantId = await h.fixtures.merchant();
    const targets = [
      `http://127.0.0.1:${r.port}/ip`,
      `http://localhost:${r.port}/name`,
      `http://[::1]:${r.port}/ipv6`,
      `http://[::ffff:127.0.0.1]:${r.port}/mapped`,
    ];
    const endpoints = await Promise.all(targets.map((url) => h.createEndpoint({ merchantId, url })));
    h.startPipeline({ allowPrivate: false, retrySchedule: [0] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    for (const endpoint of endpoints) {
      const delivery = await waitFor("FAILED", async () => {
        const d = await deliveryOf(h.admin, endpoint.id, event.id);
        return d?.status === "FAILED" ? d : undefined;
      });
      expect(await attemptsOf(h.admin, delivery.id)).toMatchObject([{ response_status: null, error_class: "BLOCKED_ADDRESS" }]);
    }
    expect(r.requests).toHaveLength(0);
  });

  it("classifies a name that does not resolve as DNS", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoint = await h.createEndpoint({ merchantId, url: "http://no-such-host.invalid/hook" });
    h.startPipeline({ allowPrivate: false, retrySchedule: [0] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    const delivery = await waitFor("FAILED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "FAILED" ? d : undefined;
    });
    expect(await attemptsOf(h.admin, delivery.id)).toMatchObject([{ response_status: null, error_class: "DNS" }]);
  });

  it("delivers to the same loopback name when the operator allows private targets", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoint = await h.createEndpoint({ merchantId, url: `http://localhost:${r.port}/allowed` });
    h.startPipeline({ allowPrivate: true });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("SUCCEEDED", async () => (await deliveryOf(h.admin, endpoint.id, event.id))?.status === "SUCCEEDED");
    expect(r.requests.map((q) => q.url)).toEqual(["/allowed"]);
  });

  it("classifies a refused connection as CONNECTION", async () => {
    const merchantId = await h.fixtures.merchant();
    const closed = await startReceiver();
    const port = closed.port;
    await closed.close();
    const endpoint = await h.createEndpoint({ merchantId, url: `http://127.0.0.1:${port}/` });
    h.startPipeline({ allowPrivate: true, retrySchedule: [0] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    const delivery = await waitFor("FAILED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "FAILED" ? d : undefined;
    });
    expect(await attemptsOf(h.admin, delivery.id)).toMatchObject([{ response_status: null, error_class: "CONNECTION" }]);
  });

  it("classifies a receiver that does not answer within the deadline as TIMEOUT", async () => {
    const merchantId = await h.fixtures.merchant();
    const silent = await startReceiver(() => new Promise(() => {}));
    const endpoint = await h.createEndpoint({ merchantId, url: silent.origin });
    h.startPipeline({ allowPrivate: true, retrySchedule: [0], requestTimeoutMs: 300 });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    const delivery = await waitFor("FAILED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "FAILED" ? d : undefined;
    });
    expect(await attemptsOf(h.admin, delivery.id)).toMatchObject([{ response_status: null, error_class: "TIMEOUT" }]);
    await silent.close();
  });
});
