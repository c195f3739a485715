import type { ChildProcess } from "node:child_process";
import {
  createEventConsumer,
  type ConsumedMessage,
  type EventIngester,
  type IngestSession,
  type MessageDisposition,
} from "../../services/webhook/src/ingest/event-consumer.ts";
import { afterAll, describe, expect, inject, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, waitFor } from "./support/harness.ts";
import { versionOf } from "./support/receiver.ts";
import { startPipelineProcess } from "./support/pipeline-child.ts";

/**
 * Batched ingest: stream order into the table across a failed batch and across the loss of the
 * ingest leader, with the real consumer, NATS and (for failover) Postgres.
 */

/** A stand-in store that records what it stored and fails the batches `failWhen` picks. */
function recordingIngester(failWhen: (batch: readonly ConsumedMessage[], call: number) => boolean) {
  const stored: number[] = [];
  const failed: number[][] = [];
  let calls = 0;
  const ingester: EventIngester = {
    async lead(_name, signal): Promise<IngestSession | undefined> {
      if (signal.aborted) return undefined;
      const lost = new AbortController();
      return {
        async store(messages): Promise<MessageDisposition[]> {
          calls += 1;
          if (failWhen(messages, calls)) {
            failed.push(messages.map((m) => m.seq));
            return messages.map(() => ({ kind: "nak", delayMs: 200 }));
          }
          stored.push(...messages.map((m) => m.seq));
          return messages.map(() => ({ kind: "ack" }));
        },
        lost: lost.signal,
        confirm: async () => true,
        republishUnstored: async () => 0,
        release: async () => {},
      };
    },
  };
  return { ingester, stored, failed };
}

describe("batched event ingest", () => {
  const h = useDeliveryHarness("ingest");
  let child: ChildProcess | undefined;

  afterAll(() => {
    child?.kill("SIGKILL");
  });

  it("hands a failed batch back and stores it again before anything newer, in stream order", async () => {
    const merchantId = await h.fixtures.merchant();
    const subscriptionId = newSubscriptionId();
    for (let version = 1; version <= 40; version++) await h.publish({ merchantId, subscriptionId, version });
    // The second and third store calls fail (the third is the first after a rewind), with later
    // messages already in hand behind them.
    const { ingester, stored, failed } = recordingIngester((_batch, call) => call === 2 || call === 3);
    const consumer = createEventConsumer(h.nc, {
      stream: h.stream,
      subjectPrefix: h.subjectPrefix,
      consumerName: "ingest-nak-test",
      ackWaitMs: 30_000,
      handle: ingester,
      batchSize: 8,
      logger: h.logger,
    });
    consumer.start();
    try {
      await waitFor("all 40 messages stored", () => new Set(stored).size === 40);
    } finally {
      await consumer.stop();
    }
    expect(failed).toHaveLength(2);
    const firstFailed = failed[0]![0]!;
    // Nothing newer was stored before the handed-back messages came again: the first store of every
    // message is in stream order (a rewind may store a stored message again; storing is idempotent).
    const firstTimeOrder = stored.filter((seq, index) => stored.indexOf(seq) === index);
    expect(firstTimeOrder).toEqual([...firstTimeOrder].sort((a, b) => a - b));
    expect(firstTimeOrder).toContain(firstFailed);
  });

  it("lets a standby take over when the leader is killed, losing nothing and keeping per-subscription order", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver();
    await h.createEndpoint({ merchantId, url: r.origin });
    const lease = { leaseMs: 2_000 };
    child = await startPipelineProcess({
      DATABASE_URL: h.webhookDatabaseUrl,
      NATS_URL: inject("natsUrl"),
      SUBDATA_WEBHOOK_SECRET_KEY: h.secretKey,
      PIPELINE_SETTINGS: JSON.stringify(h.settings({ ...lease, consumerName: "ingest-failover-test" })),
    });
    const subscriptions = Array.from({ length: 10 }, () => newSubscriptionId());
    const versions = 30;
    const storedCount = async () => {
      const { rows } = await h.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_events WHERE merchant_id = $1", [merchantId]);
      return rows[0]!.n;
    };
    // The child leads: it alone is running when the first events arrive.
    await h.publish({ merchantId, subscriptionId: subscriptions[0]!, version: 1 });
    await waitFor("the child to store the first event", async () => (await storedCount()) === 1);
    h.startPipeline({ ...lease, consumerName: "ingest-failover-test" });

    const publishVersions = async (from: number, to: number) => {
      for (let version = from; version <= to; version++) {
        for (const subscriptionId of subscriptions) {
          if (version > 1 || subscriptionId !== subscriptions[0]) await h.publish({ merchantId, subscriptionId, version });
        }
      }
    };
    // Kill the leader while it is storing the first half; the second half is published after the kill.
    const firstHalf = publishVersions(1, versions / 2);
    await waitFor("the leader to be storing the first half", async () => (await storedCount()) >= subscriptions.length * 5);
    const exited = new Promise((resolve) => child!.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    child = undefined;
    await firstHalf;
    await publishVersions(versions / 2 + 1, versions);

    const total = versions * subscriptions.length;
    await waitFor("every event stored by the new leader", async () => (await storedCount()) === total, 60_000);
    const succeeded = async () => {
      const { rows } = await h.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE merchant_id = $1 AND status = 'SUCCEEDED'", [
        merchantId,
      ]);
      return rows[0]!.n;
    };
    await waitFor("every delivery SUCCEEDED", async () => (await succeeded()) === total, 60_000);
    for (const subscriptionId of subscriptions) {
      const seen = r.requests
        .map(versionOf)
        .filter((v) => v.subscriptionId === subscriptionId)
        .map((v) => v.version);
      // Never a later version before an earlier one (a retried attempt after the kill repeats one).
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(new Set(seen)).toEqual(new Set(Array.from({ length: versions }, (_, i) => i + 1)));
    }
  });
});
