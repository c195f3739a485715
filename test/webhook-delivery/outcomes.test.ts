import { toBinary } from "@bufbuild/protobuf";
import { type SubscriptionEvent, SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { beforeAll, describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { attemptsOf, deliveryOf, newSubscriptionId, waitFor } from "./support/harness.ts";
import type { Receiver } from "./support/receiver.ts";

describe("delivery outcomes", () => {
  const h = useDeliveryHarness("outcomes");
  const receiver = h.receiver;

  const endpointRow = async (id: string) =>
    (await h.admin.query("SELECT status, disabled_reason, failing_since FROM webhook_endpoints WHERE id = $1", [id])).rows[0];

  it("when the receiver answers 410 Gone, disables the endpoint and cancels its pending deliveries", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver(() => ({ status: 410, body: "gone" }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    const subscriptionId = newSubscriptionId();
    // Three versions queue up behind the first (per-subscription order), then the pipeline starts.
    const events: SubscriptionEvent[] = [];
    for (const version of [1, 2, 3]) events.push(await h.publish({ merchantId, subscriptionId, version }));
    h.startPipeline();

    await waitFor("the endpoint disabled", async () => (await endpointRow(endpoint.id)).status === "DISABLED");
    expect((await endpointRow(endpoint.id)).disabled_reason).toBe("receiver answered 410 Gone");
    const statuses = await waitFor("every delivery cancelled", async () => {
      const rows = await Promise.all(events.map((e) => deliveryOf(h.admin, endpoint.id, e.id)));
      return rows.every((row) => row?.status === "CANCELLED") ? rows : undefined;
    });
    expect(statuses).toHaveLength(3);
    expect(r.requests).toHaveLength(1);
    const attempts = await attemptsOf(h.admin, statuses[0]!.id);
    expect(attempts).toMatchObject([{ response_status: 410, error_class: "HTTP_STATUS", response_body: "gone" }]);

    // A disabled endpoint gets no new deliveries.
    const later = await h.publish({ merchantId, subscriptionId, version: 4 });
    const other = await h.createEndpoint({ merchantId, url: `${r.origin}/other` });
    const marker = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("the marker event stored", () => deliveryOf(h.admin, other.id, marker.id));
    expect(await deliveryOf(h.admin, endpoint.id, later.id)).toBeUndefined();
  });

  it("honours Retry-After on a 429 within bounds", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver(() => ({ status: 429, headers: { "retry-after": "120" }, body: "slow down" }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    h.startPipeline({ retrySchedule: [0, 100, 100] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    const delivery = await waitFor("the first attempt recorded", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d && (await attemptsOf(h.admin, d.id)).length === 1 ? d : undefined;
    });
    const [attempt] = await attemptsOf(h.admin, delivery.id);
    expect(attempt).toMatchObject({ response_status: 429, error_class: "HTTP_STATUS" });
    const check = await h.admin.query(
      "SELECT status, next_attempt_at >= $2::timestamptz + interval '120 seconds' AS honoured FROM webhook_deliveries WHERE id = $1",
      [delivery.id, attempt!.started_at],
    );
    expect(check.rows[0]).toEqual({ status: "PENDING", honoured: true });
    expect(r.requests).toHaveLength(1);
  });

  it("does not follow a redirect: a 302 is a failed attempt", async () => {
    const merchantId = await h.fixtures.merchant();
    const target = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { location: `${target.origin}/elsewhere` } }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    h.startPipeline({ retrySchedule: [0] });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    const delivery = await waitFor("FAILED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "FAILED" ? d : undefined;
    });
    expect(await attemptsOf(h.admin, delivery.id)).toMatchObject([{ response_status: 302, error_class: "HTTP_STATUS" }]);
    expect(target.requests).toHaveLength(0);
  });

  it("disables an endpoint that has had no 2xx for longer than the limit, with the reason", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver(() => ({ status: 500 }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    await h.admin.query("UPDATE webhook_endpoints SET failing_since = now() - interval '6 days' WHERE id = $1", [endpoint.id]);
    h.startPipeline();
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    await waitFor("the endpoint disabled", async () => (await endpointRow(endpoint.id)).status === "DISABLED");
    expect((await endpointRow(endpoint.id)).disabled_reason).toBe("no successful delivery for 5d");
    expect((await deliveryOf(h.admin, endpoint.id, event.id))?.status).toBe("CANCELLED");
  });

  it("clears failing_since on success", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await receiver();
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    await h.admin.query("UPDATE webhook_endpoints SET failing_since = now() - interval '1 day' WHERE id = $1", [endpoint.id]);
    h.startPipeline();
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("SUCCEEDED", async () => (await deliveryOf(h.admin, endpoint.id, event.id))?.status === "SUCCEEDED");
    expect((await endpointRow(endpoint.id)).failing_since).toBeNull();
  });
});

describe("consuming events", () => {
  const h = useDeliveryHarness("consume");
  let r: Receiver;

  beforeAll(async () => {
    r = await h.receiver();
  });

  it("creates deliveries only for enabled endpoints that want the type, once per event, and skips poison", async () => {
    const merchantId = await h.fixtures.merchant();
    const otherMerchant = await h.fixtures.merchant();
    const all = await h.createEndpoint({ merchantId, url: `${r.origin}/all` });
    const createdOnly = await h.createEndpoint({ merchantId, url: `${r.origin}/created`, eventTypes: ["subscription.created"] });
    const disabled = await h.createEndpoint({ merchantId, url: `${r.origin}/disabled` });
    await h.admin.query("UPDATE webhook_endpoints SET status = 'DISABLED' WHERE id = $1", [disabled.id]);
    const foreign = await h.createEndpoint({ merchantId: otherMerchant, url: `${r.origin}/foreign` });
    h.startPipeline();

    // A poison message first: it is terminated and the stream moves on.
    await h.publishRaw(merchantId, new Uint8Array([0xff, 0xff, 0xff]), `evt_poison_${merchantId}`);
    const subscriptionId = newSubscriptionId();
    const created = await h.publish({ merchantId, subscriptionId, version: 1 });
    const updated = await h.publish({ merchantId, subscriptionId, version: 2 });

    await waitFor("both events delivered to /all", async () => {
      const rows = await Promise.all([created, updated].map((e) => deliveryOf(h.admin, all.id, e.id)));
      return rows.every((row) => row?.status === "SUCCEEDED");
    });
    await waitFor("created delivered to /created", async () => (await deliveryOf(h.admin, createdOnly.id, created.id))?.status === "SUCCEEDED");
    expect(await deliveryOf(h.admin, createdOnly.id, updated.id)).toBeUndefined();
    expect(await deliveryOf(h.admin, disabled.id, created.id)).toBeUndefined();
    expect(await deliveryOf(h.admin, foreign.id, created.id)).toBeUndefined();

    // The relay re-publishing an event after its dedupe window (a new message, same event id) adds nothing.
    await h.publishRaw(merchantId, toBinary(SubscriptionEventSchema, created), `${created.id}-again`);
    const marker = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("the marker delivered", async () => (await deliveryOf(h.admin, all.id, marker.id))?.status === "SUCCEEDED");
    const count = await h.admin.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = $1", [created.id]);
    expect(count.rows[0].n).toBe(2);
    // Once to /all and once to /created: the repeat was not delivered again.
    expect(r.requests.filter((q) => q.headers["webhook-id"] === created.id)).toHaveLength(2);
  });
});
