import { createLogger, type Tracing } from "@subdata/runtime";
import { createCapturedSpans } from "@subdata/runtime/test-support";
import { describe, expect, it } from "vitest";
import type { EventPublisher } from "./event-stream.ts";
import type { OutboxRow } from "./outbox-event.ts";
import type { OutboxRepository } from "./outbox-repository.ts";
import { createRelay } from "./relay.ts";
import { outboxRow as sharedOutboxRow, SNAPSHOT } from "./test-support/outbox-rows.ts";

const logger = createLogger({ name: "relay-test", level: "silent" });
const publisher: EventPublisher = { publish: async () => ({ seq: 1, duplicate: false }) };
const tracing = { tracing: createCapturedSpans().tracing, subjectPrefix: "subdata.events" };

/** A repository whose claims return nothing and report how many were open at once. */
function countingRepository() {
  let open = 0;
  let most = 0;
  let claims = 0;
  const repository: OutboxRepository = {
    async withClaimedBatch() {
      open += 1;
      claims += 1;
      most = Math.max(most, open);
      await new Promise((resolve) => setTimeout(resolve, 20));
      open -= 1;
      return { claimed: 0, outcome: { publishedIds: [], failures: [] } };
    },
    purgePublished: async () => 0,
    purgeChangeEvents: async () => 0,
  };
  return { repository, most: () => most, claims: () => claims, open: () => open };
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("createRelay", () => {
  it("runs `rounds` claim rounds side by side", async () => {
    const counted = countingRepository();
    const relay = createRelay({ repository: counted.repository, publisher, logger, batchSize: 10, rounds: 3, pollIntervalMs: 5, tracing });
    relay.start();
    await new Promise((resolve) => setTimeout(resolve, 120));
    await relay.stop();
    expect(counted.most()).toBe(3);
  });

  it("runs one round at a time by default", async () => {
    const counted = countingRepository();
    const relay = createRelay({ repository: counted.repository, publisher, logger, batchSize: 10, pollIntervalMs: 5, tracing });
    relay.start();
    await new Promise((resolve) => setTimeout(resolve, 120));
    await relay.stop();
    expect(counted.claims()).toBeGreaterThan(1);
    expect(counted.most()).toBe(1);
  });

  it("wakes every waiting round on wake()", async () => {
    const counted = countingRepository();
    const relay = createRelay({ repository: counted.repository, publisher, logger, batchSize: 10, rounds: 2, pollIntervalMs: 60_000, tracing });
    relay.start();
    // Both rounds claimed (nothing) and now wait for a wake-up or the 60 s poll.
    await until(() => counted.claims() === 2 && counted.open() === 0);
    await new Promise((resolve) => setTimeout(resolve, 10));
    relay.wake();
    await until(() => counted.claims() === 4);
    await relay.stop();
    expect(counted.claims()).toBe(4);
  });
});

const outboxRow = (id: string, subscriptionId: string, seq: bigint): OutboxRow =>
  sharedOutboxRow({ id, seq, resource_id: subscriptionId, payload: { object: { ...SNAPSHOT, id: subscriptionId }, previous: null, changed_columns: [] } });

/** A repository that hands out `rows` once, as one claimed batch. */
function batchRepository(rows: OutboxRow[]): OutboxRepository {
  return {
    async withClaimedBatch(_limit, handle) {
      const batch = rows.splice(0);
      return { claimed: batch.length, outcome: await handle(batch) };
    },
    purgePublished: async () => 0,
    purgeChangeEvents: async () => 0,
  };
}

/** A relay over `rows` (one claimed batch) with span export under the default subject prefix. */
function tracedRelay(rows: OutboxRow[], eventPublisher: EventPublisher, tracing: Tracing) {
  return createRelay({
    repository: batchRepository(rows),
    publisher: eventPublisher,
    logger,
    batchSize: 10,
    pollIntervalMs: 1_000,
    tracing: { tracing, subjectPrefix: "subdata.events" },
  });
}

describe("the relay's publish spans", () => {
  /** A publisher that records each message's traceparent and refuses the events in `failing`. */
  function recordingPublisher(failing: ReadonlySet<string> = new Set()) {
    const traceparents = new Map<string, string>();
    const publisher: EventPublisher = {
      async publish(event) {
        if (failing.has(event.id)) throw Object.assign(new Error("no PubAck"), { name: "TimeoutError" });
        traceparents.set(event.id, event.traceparent!);
        return { seq: traceparents.size, duplicate: event.id === "evt_dup" };
      },
    };
    return { publisher, traceparents };
  }

  it("exports one PRODUCER span per published event, under the ids of the traceparent the message carried", async () => {
    const { tracing, spans } = createCapturedSpans();
    const { publisher, traceparents } = recordingPublisher();
    const relay = tracedRelay([outboxRow("evt_a", "sub_1", 1n), outboxRow("evt_b", "sub_2", 2n)], publisher, tracing);
    expect(await relay.runOnce()).toMatchObject({ claimed: 2, published: 2, failed: 0 });

    expect(spans.map((span) => span.attributes["messaging.message.id"]).sort()).toEqual(["evt_a", "evt_b"]);
    for (const span of spans) {
      const eventId = String(span.attributes["messaging.message.id"]);
      const [, traceId, spanId, flags] = traceparents.get(eventId)!.split("-");
      expect(span).toMatchObject({ traceId, spanId, kind: "producer", error: false });
      expect(flags).toBe("01");
      // Each event starts a trace: the publish is its root.
      expect(span.parentSpanId).toBeUndefined();
      expect(span.name).toBe("publish subdata.events.subscription.{merchant_id}");
      expect(span.endMs).toBeGreaterThanOrEqual(span.startMs);
      expect(span.attributes).toEqual({
        "messaging.system": "nats",
        "messaging.operation.name": "publish",
        "messaging.operation.type": "send",
        "messaging.destination.name": "subdata.events.subscription.mer_1",
        "messaging.destination.template": "subdata.events.subscription.{merchant_id}",
        "messaging.message.id": eventId,
        "subdata.merchant_id": "mer_1",
        "subdata.resource_id": eventId === "evt_a" ? "sub_1" : "sub_2",
        "subdata.event_type": "subscription.created",
      });
    }
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(2);
  });

  it("marks a failed publish as an error, and exports nothing for the events its subscription then holds back", async () => {
    const { tracing, spans } = createCapturedSpans();
    const { publisher } = recordingPublisher(new Set(["evt_a"]));
    const relay = tracedRelay([outboxRow("evt_a", "sub_1", 1n), outboxRow("evt_b", "sub_1", 2n), outboxRow("evt_dup", "sub_2", 3n)], publisher, tracing);
    expect(await relay.runOnce()).toMatchObject({ claimed: 3, published: 1, failed: 1 });

    const byEvent = new Map(spans.map((span) => [span.attributes["messaging.message.id"], span]));
    expect([...byEvent.keys()].sort()).toEqual(["evt_a", "evt_dup"]);
    expect(byEvent.get("evt_a")).toMatchObject({ kind: "producer", error: true, attributes: { "error.type": "TimeoutError" } });
    // A re-publish JetStream dropped as a duplicate says so: its message never reached the stream.
    expect(byEvent.get("evt_dup")).toMatchObject({ error: false, attributes: { "subdata.duplicate": true } });
    expect(byEvent.get("evt_dup")!.attributes["error.type"]).toBeUndefined();
  });
});
