import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { createEventPublisher, createOutboxRepository, createRelay } from "@subdata/relay";
import { createCapturedLogger, createCapturedSpans } from "@subdata/runtime/test-support";
import { type DeliveryPipeline, createDeliveryPipeline } from "@subdata/webhook";
import { afterEach, describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { waitFor } from "./support/harness.ts";

/**
 * The stream keeps events for max_age, the change feed for 400 days. When the stream removed events the
 * webhook consumer never stored (it was down, or too far behind), the consumer finds its position
 * below the stream's first message, hands those events back to the relay, and every one is delivered
 * — once. The test ages them out with a max_age of one second.
 */
describe("events the stream removed before ingest stored them", () => {
  const h = useDeliveryHarness("aged");
  const pipelines: DeliveryPipeline[] = [];

  afterEach(async () => {
    await Promise.all(pipelines.splice(0).map((pipeline) => pipeline.stop()));
  });

  function startPipeline(onRepublishedEvents: (count: number) => void): { lines: string[] } {
    const { logger, lines } = createCapturedLogger({ name: "test-whd-aged", level: "info" });
    const pipeline = createDeliveryPipeline({
      pool: h.pool,
      nats: h.nc,
      secretBox: h.secretBox,
      config: h.settings(),
      logger,
      tracing: createCapturedSpans().tracing,
      onRepublishedEvents,
    });
    pipeline.start();
    pipelines.push(pipeline);
    return { lines };
  }

  it("are handed back to the relay from the change feed and delivered once each, whether or not the outbox still had them", async () => {
    const relay = createRelay({
      repository: createOutboxRepository(h.pool),
      publisher: createEventPublisher(h.nc, { stream: h.stream, subjectPrefix: h.subjectPrefix, replicas: 1 }),
      logger: h.logger,
      batchSize: 100,
      pollIntervalMs: 1_000,
      tracing: { tracing: createCapturedSpans().tracing, subjectPrefix: h.subjectPrefix },
    });
    const merchantId = await h.fixtures.merchant();
    const receiver = await h.receiver();
    await h.createEndpoint({ merchantId, url: receiver.origin });
    const delivered = () => receiver.requests.map((request) => String(request.headers["webhook-id"]));
    const outboxIds = async () => (await h.admin.query<{ id: string }>("SELECT id FROM event_outbox ORDER BY seq")).rows.map((row) => row.id);

    // Three events stored and delivered: the consumer's position is after them.
    for (let index = 0; index < 3; index++) await h.fixtures.subscription({ merchantId });
    expect(await relay.runOnce()).toMatchObject({ published: 3 });
    const republished: number[] = [];
    startPipeline((count) => republished.push(count));
    await waitFor("the first three deliveries", async () => delivered().length === 3);
    await Promise.all(pipelines.splice(0).map((pipeline) => pipeline.stop()));

    // Four more published while ingest is down, then removed from the stream; one more after that.
    for (let index = 0; index < 4; index++) await h.fixtures.subscription({ merchantId });
    expect(await relay.runOnce()).toMatchObject({ published: 4 });
    const jsm = await jetstreamManager(h.nc);
    const { name: _name, storage: _storage, retention: _retention, ...kept } = (await jsm.streams.info(h.stream)).config;
    await jsm.streams.update(h.stream, { ...kept, max_age: nanos(1_000), duplicate_window: nanos(1_000) });
    await waitFor("the seven events to age out", async () => (await jsm.streams.info(h.stream)).state.first_seq === 8);
    // The stream forgets a message id on its dedupe window's own timer, not when the message ages out:
    // restored to the 2-minute window before that timer ran, it would keep the four ids, and the
    // relay's publishes of them would be taken for duplicates and dropped. Wait until it no longer
    // knows them: a publish expecting an impossible last sequence is answered "duplicate" for an id it
    // knows and refused, storing nothing, for one it does not.
    const lostIds = (await outboxIds()).slice(3, 7);
    const js = jetstream(h.nc);
    const remembered = async (id: string) => {
      try {
        return (await js.publish(`${h.subjectPrefix}.dedupe-probe`, new Uint8Array(), { msgID: id, expect: { lastSequence: Number.MAX_SAFE_INTEGER } }))
          .duplicate;
      } catch (error) {
        if (error instanceof Error && /wrong last sequence/.test(error.message)) return false;
        throw error;
      }
    };
    await waitFor("the stream to forget the lost events' ids", async () => {
      for (const id of lostIds) if (await remembered(id)) return false;
      return true;
    });
    await jsm.streams.update(h.stream, kept);
    await h.fixtures.subscription({ merchantId });
    expect(await relay.runOnce()).toMatchObject({ published: 1 });
    // The outbox's retention removed two of them already: the change feed still has them.
    await h.admin.query("DELETE FROM event_outbox WHERE id = ANY ($1::text[])", [lostIds.slice(0, 2)]);

    const { lines } = startPipeline((count) => republished.push(count));
    await waitFor("all eight events delivered", async () => {
      await relay.runOnce();
      return delivered().length >= 8;
    });
    const changeEventIds = (await h.admin.query<{ id: string }>("SELECT id FROM change_events WHERE merchant_id = $1", [merchantId])).rows.map((row) => row.id);
    expect([...delivered()].sort()).toEqual(changeEventIds.sort());
    expect(new Set(delivered()).size).toBe(8);
    expect(republished).toEqual([4]);
    expect(lines.some((line) => line.includes("handed back to the relay") && line.includes('"handedBack":4'))).toBe(true);
    // Handed back and published again: each of the four is published now, and stored once.
    const { rows } = await h.admin.query<{ id: string; published: boolean; stored: number }>(
      `SELECT o.id, o.published_at IS NOT NULL AS published, (SELECT count(*)::int FROM webhook_events w WHERE w.id = o.id) AS stored
         FROM event_outbox o WHERE o.id = ANY ($1::text[])`,
      [lostIds],
    );
    expect(rows).toHaveLength(4);
    expect(rows.every((row) => row.published && row.stored === 1)).toBe(true);
    // Nothing more arrives once the stream and the table agree.
    await relay.runOnce();
    expect(delivered()).toHaveLength(8);
  });
});
