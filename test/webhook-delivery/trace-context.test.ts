import { createCapturedLogger, createCapturedSpans } from "@subdata/runtime/test-support";
import { type DeliveryPipeline, createDeliveryPipeline } from "@subdata/webhook";
import { createEventPublisher, createOutboxRepository, createRelay } from "@subdata/relay";
import { afterEach, describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { deliveryOf, newEventId, newSubscriptionId, waitFor } from "./support/harness.ts";
import type { ReceivedRequest } from "./support/receiver.ts";

/** The fields of a well-formed version-00 traceparent. */
function parseTraceparent(header: string | null | undefined) {
  const [, traceId, spanId, flags] = (header ?? "").split("-");
  return { traceId: traceId!, spanId: spanId!, flags: flags! };
}

/**
 * W3C trace context from the relay to the receiver: the traceparent the relay publishes an event with is
 * stored at ingest (webhook_events.traceparent), and every POST of the event continues that trace with
 * a span of its own, which the attempt's log line names too. The relay's publish, ingest and every
 * attempt are exported as spans under exactly those ids, in one trace.
 */
describe("webhook trace context", () => {
  const h = useDeliveryHarness("trace");
  const pipelines: DeliveryPipeline[] = [];

  afterEach(async () => {
    await Promise.all(pipelines.splice(0).map((pipeline) => pipeline.stop()));
  });

  /** A pipeline whose log lines the test reads ("webhook attempt" carries traceId and spanId). */
  function startPipeline(): { lines: string[] } {
    const { logger, lines } = createCapturedLogger({ name: "test-whd-trace", level: "info" });
    const pipeline = createDeliveryPipeline({
      pool: h.pool,
      nats: h.nc,
      secretBox: h.secretBox,
      config: h.settings(),
      logger,
      tracing: createCapturedSpans().tracing,
    });
    pipeline.start();
    pipelines.push(pipeline);
    return { lines };
  }

  const attemptLines = (lines: string[], eventId: string) =>
    lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === "webhook attempt" && line.eventId === eventId)
      .sort((a, b) => Number(a.attempt) - Number(b.attempt));

  const traceOf = (request: ReceivedRequest) => {
    const header = request.headers.traceparent;
    expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
    return parseTraceparent(String(header));
  };

  const storedTraceparent = async (eventId: string) =>
    (await h.admin.query<{ traceparent: string | null }>("SELECT traceparent FROM webhook_events WHERE id = $1", [eventId])).rows[0]?.traceparent;

  it("continues the relay's trace on every attempt: same trace id and flags, a new span id each time", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const relaySpanId = "00f067aa0ba902b7";
    const relayed = `00-${traceId}-${relaySpanId}-01`;
    const merchantId = await h.fixtures.merchant();
    // The first attempt fails, so the retry shows a second span in the same trace.
    const r = await h.receiver((_request, index) => (index === 0 ? { status: 503 } : { status: 200, body: "ok" }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    const { lines } = startPipeline();
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1, traceparent: relayed });

    await waitFor("the retry to succeed", async () => (await deliveryOf(h.admin, endpoint.id, event.id))?.status === "SUCCEEDED");
    expect(await storedTraceparent(event.id)).toBe(relayed);
    expect(r.requests).toHaveLength(2);
    const [first, second] = r.requests.map(traceOf) as [ReturnType<typeof traceOf>, ReturnType<typeof traceOf>];
    expect(first).toMatchObject({ traceId, flags: "01" });
    expect(second).toMatchObject({ traceId, flags: "01" });
    expect(first.spanId).not.toBe(relaySpanId);
    expect(second.spanId).not.toBe(relaySpanId);
    expect(second.spanId).not.toBe(first.spanId);
    // Nothing internal goes out with it.
    for (const request of r.requests) expect(request.headers.tracestate).toBeUndefined();

    // Each attempt is logged with the trace and span the receiver got.
    const logged = await waitFor("both attempts logged", () => {
      const found = attemptLines(lines, event.id);
      return found.length === 2 ? found : undefined;
    });
    expect(logged.map((line) => [line.attempt, line.traceId, line.spanId, line.outcome])).toEqual([
      [1, traceId, first.spanId, "retry"],
      [2, traceId, second.spanId, "succeeded"],
    ]);
  });

  it("sends a valid traceparent, a new trace per attempt, for an event published without one or with an invalid one", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver((_request, index) => (index % 2 === 0 ? { status: 500 } : { status: 204 }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    const { lines } = startPipeline();
    const untraced = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });
    await waitFor("the untraced event", async () => (await deliveryOf(h.admin, endpoint.id, untraced.id))?.status === "SUCCEEDED");
    const invalid = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1, traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` });
    await waitFor("the invalidly traced event", async () => (await deliveryOf(h.admin, endpoint.id, invalid.id))?.status === "SUCCEEDED");

    for (const event of [untraced, invalid]) {
      expect(await storedTraceparent(event.id)).toBeNull();
      const requests = r.requests.filter((request) => request.headers["webhook-id"] === event.id);
      expect(requests).toHaveLength(2);
      const traces = requests.map(traceOf);
      expect(traces.every((trace) => trace.flags === "01")).toBe(true);
      // No trace to continue: each attempt is the root of its own.
      expect(traces[1]!.traceId).not.toBe(traces[0]!.traceId);
      const logged = await waitFor("both attempts logged", () => {
        const found = attemptLines(lines, event.id);
        return found.length === 2 ? found : undefined;
      });
      expect(logged.map((line) => [line.traceId, line.spanId])).toEqual(traces.map((trace) => [trace.traceId, trace.spanId]));
    }
  });

  it("exports the relay's publish and every attempt: the receiver's traceparent names an exported span whose parent is the exported publish", async () => {
    const { tracing, spans: exported } = createCapturedSpans();
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver((_request, index) => (index === 0 ? { status: 503 } : { status: 200, body: "ok" }));
    const endpoint = await h.createEndpoint({ merchantId, url: `${r.origin}/hook?token=receiver-secret` });
    const pipeline = createDeliveryPipeline({ pool: h.pool, nats: h.nc, secretBox: h.secretBox, config: h.settings(), logger: h.logger, tracing });
    pipeline.start();
    pipelines.push(pipeline);
    // The relay as the relay's main.ts wires it, on this test's database.
    const relay = createRelay({
      repository: createOutboxRepository(h.pool),
      publisher: createEventPublisher(h.nc, { stream: h.stream, subjectPrefix: h.subjectPrefix, replicas: 1 }),
      logger: h.logger,
      batchSize: 10,
      pollIntervalMs: 1_000,
      tracing: { tracing, subjectPrefix: h.subjectPrefix },
    });
    const subscription = await h.fixtures.subscription({ merchantId });
    expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
    const eventId = (await h.admin.query<{ id: string }>("SELECT id FROM event_outbox WHERE merchant_id = $1", [merchantId])).rows[0]!.id;

    await waitFor("the retry to succeed", async () => (await deliveryOf(h.admin, endpoint.id, eventId))?.status === "SUCCEEDED");
    const producer = exported.filter((span) => span.kind === "producer");
    expect(producer).toHaveLength(1);
    expect(producer[0]).toMatchObject({
      error: false,
      attributes: {
        "messaging.system": "nats",
        "messaging.destination.name": `${h.subjectPrefix}.subscription.${merchantId}`,
        "messaging.message.id": eventId,
        "subdata.merchant_id": merchantId,
        "subdata.resource_id": subscription.id,
      },
    });
    // Ingest is a CONSUMER span under the publish, a sibling of the attempts.
    const consumers = exported.filter((span) => span.kind === "consumer");
    expect(consumers).toHaveLength(1);
    expect(consumers[0]).toMatchObject({
      traceId: producer[0]!.traceId,
      parentSpanId: producer[0]!.spanId,
      error: false,
      attributes: {
        "messaging.operation.type": "process",
        "messaging.message.id": eventId,
        "messaging.destination.name": `${h.subjectPrefix}.subscription.${merchantId}`,
      },
    });
    // The span the consumer stored is the exported publish.
    expect(await storedTraceparent(eventId)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(parseTraceparent(await storedTraceparent(eventId))).toMatchObject({ traceId: producer[0]!.traceId, spanId: producer[0]!.spanId });

    expect(r.requests).toHaveLength(2);
    const clients = exported.filter((span) => span.kind === "client");
    expect(clients).toHaveLength(2);
    const byId = new Map(exported.map((span) => [span.spanId, span]));
    for (const [index, request] of r.requests.entries()) {
      const received = traceOf(request);
      const attempt = byId.get(received.spanId);
      expect(attempt).toMatchObject({ traceId: received.traceId, kind: "client", name: "POST", parentSpanId: producer[0]!.spanId });
      expect(attempt!.attributes).toMatchObject({
        "http.request.method": "POST",
        "server.address": "127.0.0.1",
        "server.port": Number(new URL(r.origin).port),
        "subdata.endpoint_id": endpoint.id,
        "subdata.event_id": eventId,
        "subdata.attempt": index + 1,
      });
      // The receiver's server span would be a child of this one: its parent is exported as well.
      expect(byId.get(attempt!.parentSpanId!)?.kind).toBe("producer");
    }
    const [failed, succeeded] = r.requests.map((request) => byId.get(traceOf(request).spanId)!);
    expect(failed).toMatchObject({ error: true, attributes: { "http.response.status_code": 503, "subdata.error_class": "HTTP_STATUS" } });
    expect(succeeded).toMatchObject({ error: false, attributes: { "http.response.status_code": 200, "subdata.error_class": "NONE" } });
    expect(JSON.stringify(exported)).not.toContain("receiver-secret");
  });

  it("follows the publisher's sampling decision: an unsampled event's ingest and attempts are not recorded, and its receiver is told so", async () => {
    const { tracing, spans: exported } = createCapturedSpans();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver(() => ({ status: 204 }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    const pipeline = createDeliveryPipeline({ pool: h.pool, nats: h.nc, secretBox: h.secretBox, config: h.settings(), logger: h.logger, tracing });
    pipeline.start();
    pipelines.push(pipeline);
    const unsampled = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1, traceparent: `00-${traceId}-00f067aa0ba902b7-00` });
    const sampled = await h.publish({
      merchantId,
      subscriptionId: newSubscriptionId(),
      version: 1,
      traceparent: `00-${traceId.replace(/^4/, "5")}-00f067aa0ba902b7-01`,
    });
    for (const event of [unsampled, sampled]) {
      await waitFor("the delivery", async () => (await deliveryOf(h.admin, endpoint.id, event.id))?.status === "SUCCEEDED");
    }
    const sent = (eventId: string) => parseTraceparent(String(r.requests.find((request) => request.headers["webhook-id"] === eventId)!.headers.traceparent));
    expect(sent(unsampled.id)).toMatchObject({ traceId, flags: "00" });
    expect(sent(sampled.id)).toMatchObject({ flags: "01" });
    // The sampled event's consumer and client spans were recorded (ended before its delivery was); the unsampled one's never.
    await waitFor("the sampled event's spans", () => exported.filter((span) => span.attributes["subdata.event_id"] === sampled.id).length === 1 || undefined);
    expect(exported.filter((span) => span.traceId === traceId)).toEqual([]);
    expect(exported.filter((span) => span.attributes["messaging.message.id"] === sampled.id)).toHaveLength(1);
  });

  it("stores only a well-formed version-00 traceparent: the column refuses anything else", async () => {
    const merchantId = await h.fixtures.merchant();
    const insert = (traceparent: string | null) =>
      h.admin.query(
        `INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body, traceparent)
         VALUES ($1, $2, $3, 'subscription.created', 1, now(), '{}', $4)`,
        [newEventId(), merchantId, newSubscriptionId(), traceparent],
      );
    await expect(insert(null)).resolves.toBeDefined();
    await expect(insert("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")).resolves.toBeDefined();
    for (const bad of ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "tracestate=secret", "x".repeat(55)]) {
      await expect(insert(bad), bad).rejects.toMatchObject({ code: "23514", constraint: "webhook_events_traceparent_format" });
    }
  });
});
