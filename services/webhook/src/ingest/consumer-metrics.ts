import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Counter, Gauge, type Registry } from "@subdata/runtime";

/**
 * The JetStream consumer's backlog, read from consumer info at scrape time (no timer to stop):
 * subdata_jetstream_consumer_pending{stream, consumer, state=pending|ack_pending}. `pending` is
 * num_pending (events not yet handed to any replica), `ack_pending` those handed out but not acked.
 * Before NATS is connected, or when it does not answer, the gauges keep their last values and
 * subdata_jetstream_consumer_info_errors_total counts the miss.
 */
export function registerConsumerMetrics(
  registry: Registry,
  options: { nats: () => NatsConnection | undefined; stream: string; consumer: string },
): void {
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
}
