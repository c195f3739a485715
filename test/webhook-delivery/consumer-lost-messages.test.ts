import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "@subdata/events";
import { Registry } from "@subdata/runtime";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { registerConsumerMetrics } from "../../services/webhook/src/ingest/consumer-metrics.ts";
import { waitFor } from "../support/wait-for.ts";

// A consumer that falls further behind than the stream's max_age: the events it never stored are
// counted, so an alert can say so rather than the webhooks going missing without a word.
describe("the webhook consumer's lost-message figure", () => {
  const runId = inject("runId");
  const stream = `T_${runId}_lost`;
  const subject = `t.${runId}.lost.subscription.mer_x`;
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connectNats(inject("natsUrl"), "webhook");
  });

  afterAll(async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(stream).catch(() => false);
    await nc?.close();
  });

  const lostOf = async (registry: Registry) =>
    (await registry.getSingleMetric("subdata_jetstream_consumer_lost_messages")!.get()).values.find((value) => value.labels.consumer === "deliveries")?.value;

  it("is 0 while the consumer keeps up, and counts the events the stream dropped before it acked them, not those it acked", async () => {
    const jsm = await jetstreamManager(nc);
    const config = { name: stream, subjects: [`t.${runId}.lost.>`], storage: StorageType.File, retention: RetentionPolicy.Limits };
    await jsm.streams.add(config);
    await jsm.consumers.add(stream, {
      durable_name: "deliveries",
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: 1,
    });
    const registry = new Registry();
    registerConsumerMetrics(registry, { nats: () => nc, stream, consumer: "deliveries" });
    const js = jetstream(nc);

    // Kept up: one event published, taken and acked.
    await js.publish(subject, new Uint8Array([1]));
    const first = await (await js.consumers.get(stream, "deliveries")).next({ expires: 5_000 });
    await first!.ackAck();
    // Fallen behind: three more the consumer does not ask for, then a max_age that ages all four out.
    for (const byte of [2, 3, 4]) await js.publish(subject, new Uint8Array([byte]));
    expect(await lostOf(registry)).toBe(0);
    const { name: _name, storage: _storage, retention: _retention, ...updatable } = config;
    await jsm.streams.update(stream, { ...updatable, max_age: nanos(1_000), duplicate_window: nanos(1_000) });
    await waitFor("the events to age out", async () => (await jsm.streams.info(stream)).state.first_seq === 5);
    expect(await lostOf(registry)).toBe(3);
  });
});
