import { Writable } from "node:stream";
import { clone } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { createLogger, Registry } from "@subdata/runtime";
import { createCapturedSpans } from "@subdata/runtime/test-support";
import { createDeliveryPipeline, createRefusedEventMetric } from "@subdata/webhook";
import { describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, subscriptionEvent, waitFor } from "./support/harness.ts";

/**
 * Whoever can publish on the events' subjects can claim any event. Ingest stores an event only if it
 * is the change_events row it names: forged or altered copies are dropped (acked, so never handed out
 * again), counted per reason, logged without the body, and never delivered — while the genuine event
 * they imitate, published after them, is delivered once and unaltered.
 */
describe("events that do not match their change_events row", () => {
  const h = useDeliveryHarness("forged");

  it("are dropped, counted and logged, and never delivered, while the genuine events are", async () => {
    const victim = await h.fixtures.merchant();
    const other = await h.fixtures.merchant();
    const r = await h.receiver();
    const victimEndpoint = await h.createEndpoint({ merchantId: victim, url: `${r.origin}/victim` });
    const otherEndpoint = await h.createEndpoint({ merchantId: other, url: `${r.origin}/other` });

    const registry = new Registry();
    const lines: string[] = [];
    const logger = createLogger({
      name: "test-forged",
      level: "warn",
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    });

    // Recorded (the change happened) but not yet published: every forgery below reaches ingest first.
    const subscriptionId = newSubscriptionId();
    const genuine = await h.record({ merchantId: victim, subscriptionId, version: 1 });
    const altered = (change: (event: typeof genuine) => void) => {
      const copy = clone(SubscriptionEventSchema, genuine);
      change(copy);
      return copy;
    };
    const forgeries: Array<{ reason: string; event: typeof genuine; subjectMerchant?: string }> = [
      {
        reason: "merchant",
        event: altered((e) => {
          e.merchantId = other;
          e.subscription!.merchantId = other;
        }),
        // The genuine event's subject: only the claimed merchant differs.
        subjectMerchant: victim,
      },
      { reason: "subject", event: genuine, subjectMerchant: other },
      {
        reason: "version",
        event: altered((e) => {
          e.version = 7n;
        }),
      },
      {
        reason: "type",
        event: altered((e) => {
          e.type = EventType.SUBSCRIPTION_DELETED;
        }),
      },
      {
        reason: "resource",
        event: altered((e) => {
          e.subscriptionId = newSubscriptionId();
        }),
      },
      {
        reason: "body",
        event: altered((e) => {
          e.subscription!.customer!.email = "attacker@example.com";
        }),
      },
      {
        reason: "body",
        event: altered((e) => {
          e.subscription!.quantity = 99;
        }),
      },
      { reason: "unknown_event", event: subscriptionEvent({ merchantId: victim, subscriptionId: newSubscriptionId(), version: 1 }) },
      { reason: "unknown_event", event: subscriptionEvent({ merchantId: other, subscriptionId: newSubscriptionId(), version: 1 }) },
    ];
    for (const forgery of forgeries) await h.publishEvent(forgery.event, forgery.subjectMerchant);
    await h.publishEvent(genuine);
    const later = await h.publish({ merchantId: victim, subscriptionId, version: 2 });

    const pipeline = createDeliveryPipeline({
      pool: h.pool,
      nats: h.nc,
      secretBox: h.secretBox,
      config: h.settings(),
      logger,
      tracing: createCapturedSpans().tracing,
      onRefusedEvent: createRefusedEventMetric(registry),
    });
    pipeline.start();
    try {
      await waitFor("both genuine events delivered", () => r.requests.length >= 2);
      const jsm = await jetstreamManager(h.nc);
      await waitFor("every message acked", async () => {
        const info = await jsm.consumers.info(h.stream, "webhook-deliveries");
        return info.num_pending === 0 && info.num_ack_pending === 0 && info.ack_floor.stream_seq === forgeries.length + 2;
      });
    } finally {
      await pipeline.stop();
    }

    // Delivered: the genuine events, once each, to the victim's endpoint only, as recorded.
    expect(r.requests.map((request) => [request.url, request.headers["webhook-id"]])).toEqual([
      ["/victim", genuine.id],
      ["/victim", later.id],
    ]);
    const first = JSON.parse(r.requests[0]!.body) as { data: { object: { quantity: number; customer: { email: string } } } };
    expect(first.data.object).toMatchObject({ quantity: 1, customer: { email: "jane@example.com" } });
    const stored = await h.admin.query<{ id: string; merchant_id: string }>("SELECT id, merchant_id FROM webhook_events ORDER BY occurred_at");
    expect(stored.rows).toEqual([
      { id: genuine.id, merchant_id: victim },
      { id: later.id, merchant_id: victim },
    ]);
    const deliveries = await h.admin.query<{ endpoint_id: string }>("SELECT endpoint_id FROM webhook_deliveries");
    expect(deliveries.rows.map((row) => row.endpoint_id)).toEqual([victimEndpoint.id, victimEndpoint.id]);
    expect(deliveries.rows.map((row) => row.endpoint_id)).not.toContain(otherEndpoint.id);

    // Counted per reason.
    const counted = (await registry.getSingleMetric("subdata_webhook_refused_events_total")!.get()).values;
    const byReason = Object.fromEntries(counted.map((value) => [value.labels.reason, value.value]));
    expect(byReason).toEqual({ merchant: 1, subject: 1, version: 1, type: 1, resource: 1, body: 2, unknown_event: 2 });

    // Logged by id and reason, never with the body.
    const refusals = lines.map((line) => JSON.parse(line) as { msg: string; reason?: string; eventId?: string }).filter((line) => line.reason);
    expect(refusals.map((line) => line.reason).sort()).toEqual(forgeries.map((forgery) => forgery.reason).sort());
    expect(refusals.every((line) => line.eventId && /change_events row/.test(line.msg))).toBe(true);
    expect(lines.join("")).not.toMatch(/attacker@example\.com|jane@example\.com/);
  });
});
