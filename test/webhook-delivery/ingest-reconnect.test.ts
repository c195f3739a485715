import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { createEventConsumer, type EventIngester, type IngestSession, type MessageDisposition } from "../../services/webhook/src/ingest/event-consumer.ts";
import { connectNats } from "@subdata/events";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../faults/fault-proxy.ts";
import { createHarness, type Harness, newSubscriptionId, waitFor } from "./support/harness.ts";

/**
 * A NATS connection that drops while JetStream is handing out a message (a server restart, a network
 * cut) loses that message on the way: the server counts it as delivered and would redeliver it only
 * after ack_wait, while newer messages flow at once on the new connection. Stored in that order, v(n+1)
 * becomes the head of its subscription and is sent before v(n) (the fault suite's "v6 after v19").
 * The consumer must notice the lost delivery and rewind before storing anything newer.
 */

/** Records the stream sequences it is asked to store, in order, and acks everything. */
function recordingIngester() {
  const stored: number[] = [];
  const ingester: EventIngester = {
    async lead(_name, signal): Promise<IngestSession | undefined> {
      if (signal.aborted) return undefined;
      return {
        async store(messages): Promise<MessageDisposition[]> {
          stored.push(...messages.map((m) => m.seq));
          return messages.map(() => ({ kind: "ack" }));
        },
        lost: new AbortController().signal,
        confirm: async () => true,
        republishUnstored: async () => 0,
        release: async () => {},
      };
    },
  };
  return { ingester, stored };
}

describe("event ingest across a NATS connection that drops mid-delivery", () => {
  let h: Harness;
  let proxy: FaultProxy;
  let consumerConnection: NatsConnection;

  beforeAll(async () => {
    h = await createHarness("ingest-reconnect");
    const nats = new URL(inject("natsUrl"));
    // Only the consumer's connection goes through the proxy; the test publishes on its own.
    proxy = await startFaultProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
    consumerConnection = await connectNats(`nats://${proxy.address}`, "webhook");
  });
  afterAll(async () => {
    await consumerConnection?.close();
    await proxy?.close();
    await h.close();
  });

  it("stores a message lost in transit before anything published after the reconnect", async () => {
    const merchantId = await h.fixtures.merchant();
    const subscriptionId = newSubscriptionId();
    const consumerName = "ingest-reconnect-test";
    const { ingester, stored } = recordingIngester();
    const consumer = createEventConsumer(consumerConnection, {
      stream: h.stream,
      subjectPrefix: h.subjectPrefix,
      consumerName,
      // Long enough that a redelivery by ack_wait cannot be what brings v2 back first.
      ackWaitMs: 60_000,
      handle: ingester,
      batchSize: 8,
      logger: h.logger,
    });
    const jsm = await jetstreamManager(h.nc);
    const seqOf = async () => (await jsm.streams.info(h.stream)).state.last_seq;
    consumer.start();
    try {
      await h.publish({ merchantId, subscriptionId, version: 1 });
      const v1 = await seqOf();
      await waitFor("v1 stored", () => stored.includes(v1));

      // v2 is handed out into a connection that no longer carries anything back.
      await proxy.set({ kind: "blackhole" });
      await h.publish({ merchantId, subscriptionId, version: 2 });
      const v2 = await seqOf();
      await waitFor("the server to count v2 as delivered", async () => (await jsm.consumers.info(h.stream, consumerName)).delivered.stream_seq >= v2);

      // The connection drops (its bytes in flight with it) and the client reconnects.
      await proxy.set({ kind: "reset" });
      await proxy.set({ kind: "pass" });
      await waitFor("the consumer's connection to be back", async () => {
        try {
          await consumerConnection.flush();
          return true;
        } catch {
          return false;
        }
      });
      await h.publish({ merchantId, subscriptionId, version: 3 });
      const v3 = await seqOf();
      await waitFor("v3 stored", () => stored.includes(v3));

      // The first store of each message is in stream order: v2 came back before v3 was stored.
      const firstTime = stored.filter((seq, index) => stored.indexOf(seq) === index);
      expect(firstTime).toEqual([v1, v2, v3]);
    } finally {
      await consumer.stop();
    }
  });
});
