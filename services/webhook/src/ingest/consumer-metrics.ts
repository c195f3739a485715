import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Counter, Gauge, type Registry } from "@subdata/runtime";
import type { RefusalReason } from "./event-provenance.ts";

/**
 * The JetStream consumer's backlog, read from consumer info at scrape time (no timer to stop):
 * subdata_jetstream_consumer_pending{stream, consumer, state=pending|ack_pending}. `pending` is
 * num_pending (events not yet handed to any replica), `ack_pending` those handed out but not acked.
 * Before NATS is connected, or when it does not answer, the gauges keep their last values and
 * subdata_jetstream_consumer_info_errors_total counts the miss.
 *
 * subdata_jetstream_consumer_lost_messages: stream sequences the stream removed (max_age) above the
 * consumer's ack floor, i.e. events this consumer never stored: a consumer that fell further behind
 * than max_age. Above 0 until the consumer acks past the hole; the consumer hands those events back to
 * the relay from the outbox when it next positions itself (docs/runbooks.md#consumer-lost-events). It counts every subject of the stream, which holds only what
 * the consumer's filter takes.
 */
export function registerConsumerMetrics(registry: Registry, options: { nats: () => NatsConnection | undefined; stream: string; consumer: string }): void {
  const errors = new Counter({
    name: "subdata_jetstream_consumer_info_errors_total",
    help: "Scrapes where the consumer's info could not be read",
    registers: [registry],
  });
  new Gauge({
    name: "subdata_jetstream_consumer_pending",
    help: "Messages of the webhook consumer not yet delivered (pending) or delivered but not acked (ack_pending)",
    labelNames: ["stream", "consumer", "state"] as const,
    registers: [registry],
    async collect() {
      const nc = options.nats();
      if (!nc || nc.isClosed()) return;
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2_000 });
        const info = await jsm.consumers.info(options.stream, options.consumer);
        const labels = { stream: options.stream, consumer: options.consumer };
        this.set({ ...labels, state: "pending" }, info.num_pending);
        this.set({ ...labels, state: "ack_pending" }, info.num_ack_pending);
      } catch {
        errors.inc();
      }
    },
  });
  new Gauge({
    name: "subdata_jetstream_consumer_lost_messages",
    help: "Messages the stream removed (max_age) before the webhook consumer acknowledged them: events never stored",
    labelNames: ["stream", "consumer"] as const,
    registers: [registry],
    async collect() {
      const nc = options.nats();
      if (!nc || nc.isClosed()) return;
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2_000 });
        const [consumer, stream] = await Promise.all([jsm.consumers.info(options.stream, options.consumer), jsm.streams.info(options.stream)]);
        // After a rewind the floor reads 0 until the first ack: the consumer starts at opt_start_seq then.
        const floor = Math.max(consumer.ack_floor.stream_seq, (consumer.config.opt_start_seq ?? 1) - 1);
        this.set({ stream: options.stream, consumer: options.consumer }, Math.max(0, stream.state.first_seq - 1 - floor));
      } catch {
        errors.inc();
      }
    },
  });
}

/**
 * subdata_webhook_refused_events_total{reason}: consumed events that were dropped instead of stored —
 * undecodable, or not matching the change_events row they claim to be (event-provenance.ts). Anything
 * but "undecodable" means someone published on the events' subjects who is not the relay: see
 * docs/runbooks.md#refused-events. Returns the ingester's onRefused.
 */
export function createRefusedEventMetric(registry: Registry): (reason: RefusalReason) => void {
  const refused = new Counter({
    name: "subdata_webhook_refused_events_total",
    help: "Consumed events dropped without delivery: undecodable, or not matching their change_events row (forged or altered)",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  return (reason) => refused.inc({ reason });
}

/**
 * subdata_webhook_republished_events_total: events the stream removed (max_age) before the consumer
 * stored them, handed back to the relay from the outbox to publish again (event-consumer.ts).
 */
export function createRepublishedEventMetric(registry: Registry): (count: number) => void {
  const republished = new Counter({
    name: "subdata_webhook_republished_events_total",
    help: "Events the stream removed before the webhook consumer stored them, handed back to the relay from the outbox",
    registers: [registry],
  });
  return (count) => republished.inc(count);
}
