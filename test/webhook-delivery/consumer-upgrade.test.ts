import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { changeEventFromSubscriptionEvent, eventFilter, resourceEventFilter } from "@subdata/events";
import { describe, expect, it } from "vitest";
import { renderedEvent } from "../../services/webhook/src/ingest/event-message.ts";
import { ingestEvent } from "../../services/webhook/src/ingest/ingest-repository.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, waitFor } from "./support/harness.ts";

/**
 * The durable consumer as a webhook service that consumed subscription events only left it: filter
 * `<prefix>.subscription.>`, with charge events already in the stream below its ack floor (a relay that
 * publishes them ran before this webhook service). Taking the new filter must not lose those, nor deliver
 * anything twice.
 */
describe("the event consumer of an earlier version, subscription events only", () => {
  const h = useDeliveryHarness("consumer-upgrade");

  it("is widened to every resource without losing the events it skipped or delivering any twice", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver();
    const endpoint = await h.createEndpoint({ merchantId, url: `${r.origin}/hook` });
    const subscriptionId = newSubscriptionId();
    // Stream order: s1, c1, s2, s3, c2 (stream sequences 1–5).
    const s1 = await h.publish({ merchantId, subscriptionId, version: 1 });
    const c1 = await h.publishCharge({ merchantId, chargeId: "ch_upgrade", version: 1 });
    const s2 = await h.publish({ merchantId, subscriptionId, version: 2 });
    const s3 = await h.publish({ merchantId, subscriptionId, version: 3 });
    const c2 = await h.publishCharge({ merchantId, chargeId: "ch_upgrade", version: 2 });

    // The earlier version's durable: it stored s1 and s2 (with their deliveries) and acked them.
    const jsm = await jetstreamManager(h.nc);
    await jsm.consumers.add(h.stream, {
      durable_name: "webhook-deliveries",
      filter_subject: resourceEventFilter(h.subjectPrefix, "subscription"),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: 1,
    });
    const old = await jetstream(h.nc).consumers.get(h.stream, "webhook-deliveries");
    for (const expected of [s1, s2]) {
      const message = await old.next({ expires: 5_000 });
      expect(message?.headers?.get("Nats-Msg-Id")).toBe(expected.id);
      await ingestEvent(h.pool, renderedEvent(changeEventFromSubscriptionEvent(expected)));
      await message!.ackAck();
    }
    const before = await jsm.consumers.info(h.stream, "webhook-deliveries");
    // c1 lies below the ack floor: continuing from the floor would never hand it out.
    expect(before.ack_floor.stream_seq).toBe(3);

    h.startPipeline();
    const all = [s1.id, c1.id, s2.id, s3.id, c2.id];
    await waitFor("every event delivered", () => new Set(r.requests.map((q) => q.headers["webhook-id"])).size === all.length);
    await waitFor("the consumer drained", async () => {
      const info = await jsm.consumers.info(h.stream, "webhook-deliveries");
      return info.num_pending === 0 && info.num_ack_pending === 0;
    });

    expect(r.requests.map((q) => q.headers["webhook-id"]).sort()).toEqual([...all].sort());
    const deliveries = await h.admin.query<{ event_id: string }>("SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1", [endpoint.id]);
    expect(deliveries.rows.map((row) => row.event_id).sort()).toEqual([...all].sort());
    const events = await h.admin.query<{ id: string; resource_id: string; type: string }>(
      "SELECT id, resource_id, type FROM webhook_events WHERE merchant_id = $1 ORDER BY id",
      [merchantId],
    );
    expect(events.rows).toHaveLength(all.length);
    expect(events.rows.find((row) => row.id === c1.id)).toMatchObject({ resource_id: "ch_upgrade", type: "charge.created" });
    // The charge's versions arrive in order: c2 only after c1.
    const chargeOrder = r.requests.map((q) => q.headers["webhook-id"]).filter((id) => id === c1.id || id === c2.id);
    expect(chargeOrder).toEqual([c1.id, c2.id]);
    expect((await jsm.consumers.info(h.stream, "webhook-deliveries")).config.filter_subject).toBe(eventFilter(h.subjectPrefix));
  });
});
