import { randomBytes } from "node:crypto";
import { createCallerTokens } from "@subdata/runtime/test-support";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createSecretBox, generateSigningSecret } from "@subdata/webhook";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures } from "../support/fixtures.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { type Receiver, startReceiver } from "../webhook-delivery/support/receiver.ts";
import { type CollectedSpan, startCollector } from "./support/otlp-collector.ts";
import { waitFor } from "../support/wait-for.ts";
import { listeningPorts, type RunningProcess, sample, scrape, startProcess } from "./support/process.ts";

/**
 * The event path as real processes: subscriptions written to Postgres → outbox → relay → JetStream →
 * webhook service → a slow receiver. The webhook service gets SIGTERM mid-burst, must exit 0, and once
 * restarted every event must be delivered, exactly once (a graceful stop finishes what it started).
 * A stub OTLP collector receives the relay's publish spans and the webhook service's attempt spans.
 *
 * The webhook service delivers every due row of its database, so this file
 * runs against a database of its own rather than the run's shared one.
 */
describe("webhook service lifecycle mid-burst", () => {
  const runId = inject("runId");
  const stream = `${runId}_lifecycle`;
  const subjectPrefix = `${runId}.lifecycle`;
  const secretKey = randomBytes(32).toString("base64");
  const processes: RunningProcess[] = [];
  let database: TestDatabase;
  let admin: pg.Pool;
  let webhookDatabaseUrl: string;
  let receiver: Receiver | undefined;
  let collector: Awaited<ReturnType<typeof startCollector>> | undefined;

  beforeAll(async () => {
    database = await createTestDatabase("lifecycle");
    admin = new pg.Pool({ connectionString: database.adminUrl, max: 2 });
    webhookDatabaseUrl = database.roleUrls.webhook;
  }, 120_000);

  afterAll(async () => {
    for (const proc of processes) proc.kill();
    await Promise.all(processes.map((proc) => proc.exited));
    await receiver?.close();
    await collector?.close();
    const nc = await connect({ servers: inject("natsUrl") });
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => {});
    await nc.close();
    await admin?.end();
    await database?.drop();
  });

  it("drains in-flight deliveries on SIGTERM, exits 0, and after a restart every event is delivered once", async () => {
    collector = await startCollector();
    const common = {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      DATABASE_URL: webhookDatabaseUrl,
      NATS_URL: inject("natsUrl"),
      SUBDATA_EVENTS_STREAM: stream,
      SUBDATA_EVENTS_SUBJECT_PREFIX: subjectPrefix,
      SUBDATA_WEBHOOK_SECRET_KEY: secretKey,
      SUBDATA_WEBHOOK_ALLOW_PRIVATE: "true",
      LOG_LEVEL: "debug",
    };
    const relay = startProcess("relay", "services/relay/src/main.ts", { ...common, SUBDATA_RELAY_HEALTH_PORT: "0" });
    processes.push(relay);
    const relayPort = Number((await relay.waitForLine((line) => line.msg === "relay health endpoint listening", "relay health port")).port);
    await waitFor("the relay to be ready (stream created)", async () => (await fetch(`http://127.0.0.1:${relayPort}/readyz`)).status === 200);

    // A receiver that holds every POST until the webhook service has begun to shut down, so deliveries are
    // in flight at SIGTERM however slowly the host runs, and answers slowly after that.
    let inFlight = 0;
    let shutdownSeen!: () => void;
    const shutdownBegan = new Promise<void>((resolve) => {
      shutdownSeen = resolve;
    });
    receiver = await startReceiver(async () => {
      inFlight++;
      await shutdownBegan;
      await new Promise((resolve) => setTimeout(resolve, 150));
      inFlight--;
      return { status: 200, body: "ok" };
    });
    const fixtures = createFixtures(admin);
    const merchantId = await fixtures.merchant();
    const { rows } = await admin.query<{ id: string }>("SELECT subdata_new_id('we') AS id");
    const endpointId = rows[0]!.id;
    await admin.query("INSERT INTO webhook_endpoints (id, merchant_id, url, event_types, secret_ciphertext) VALUES ($1, $2, $3, '{}', $4)", [
      endpointId,
      merchantId,
      receiver.origin,
      createSecretBox(secretKey).seal(generateSigningSecret(), endpointId),
    ]);

    const webhookEnv = {
      ...common,
      ...createCallerTokens().environment,
      SUBDATA_PAGE_TOKEN_SECRET: randomBytes(24).toString("hex"),
      // At most two POSTs at a time, each answered 150 ms after the shutdown began: the burst cannot finish
      // between SIGTERM and the pipeline's stop.
      SUBDATA_WEBHOOK_CONCURRENCY: "2",
    };
    const first = startProcess("webhook", "services/webhook/src/main.ts", webhookEnv);
    processes.push(first);
    await listeningPorts(first);
    await first.waitForLine((line) => line.msg === "delivery pipeline started", "the pipeline");

    const burst = 30;
    for (let i = 0; i < burst; i++) await fixtures.subscription({ merchantId });
    const events = await admin.query<{ id: string }>("SELECT id FROM event_outbox WHERE merchant_id = $1", [merchantId]);
    expect(events.rows).toHaveLength(burst);
    const eventIds = events.rows.map((row) => row.id);

    await waitFor("the burst to be mid-delivery", () => inFlight > 0);
    first.child.kill("SIGTERM");
    await first.waitForLine((line) => line.msg === "shutting down", "the shutdown to begin");
    shutdownSeen();
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(first.lines.some((line) => line.msg === "stopped")).toBe(true);
    expect(first.lines.filter((line) => line.msg === "shutdown step failed")).toEqual([]);
    // Whatever the receiver answered before the exit was recorded: nothing is left claimed mid-POST.
    const answered = receiver.requests.length;
    expect(inFlight).toBe(0);
    expect(answered).toBeLessThan(burst);
    const succeeded = await admin.query<{ count: number }>(
      "SELECT count(*)::int AS count FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'SUCCEEDED'",
      [endpointId],
    );
    expect(succeeded.rows[0]!.count).toBe(answered);

    const second = startProcess("webhook", "services/webhook/src/main.ts", webhookEnv);
    processes.push(second);
    const secondPorts = await listeningPorts(second);
    await waitFor(
      "every delivery to succeed",
      async () => {
        const done = await admin.query<{ count: number }>(
          "SELECT count(*)::int AS count FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'SUCCEEDED'",
          [endpointId],
        );
        return done.rows[0]!.count === burst;
      },
      60_000,
    );
    const received = receiver.requests.map((request) => String(request.headers["webhook-id"]));
    expect(new Set(received)).toEqual(new Set(eventIds));
    expect(received).toHaveLength(burst);

    // Webhook metrics after real deliveries.
    const webhookMetrics = await scrape(secondPorts.metricsPort);
    expect(sample(webhookMetrics, "subdata_webhook_attempts_total", { outcome: "succeeded", error_class: "NONE" })).toBe(burst - answered);
    expect(sample(webhookMetrics, "subdata_webhook_deliveries_total", { outcome: "succeeded" })).toBe(burst - answered);
    expect(sample(webhookMetrics, "subdata_webhook_deliveries_total", { outcome: "failed" })).toBe(0);
    expect(sample(webhookMetrics, "subdata_webhook_attempt_duration_seconds_count", { error_class: "NONE" })).toBe(burst - answered);
    expect(sample(webhookMetrics, "subdata_webhook_endpoints_disabled_total")).toBe(0);
    expect(sample(webhookMetrics, "subdata_jetstream_consumer_pending", { stream, consumer: "webhook-deliveries", state: "pending" })).toBe(0);
    expect(sample(webhookMetrics, "subdata_jetstream_consumer_pending", { state: "ack_pending" })).toBeDefined();
    expect(sample(webhookMetrics, "subdata_db_pool_connections", { component: "webhook", state: "total" })).toBeGreaterThan(0);

    // Relay metrics (on its health port): everything published, nothing pending.
    const relayMetrics = await scrape(relayPort);
    expect(sample(relayMetrics, "subdata_relay_events_total", { outcome: "published" })).toBe(burst);
    expect(sample(relayMetrics, "subdata_outbox_pending_events")).toBe(0);
    expect(sample(relayMetrics, "subdata_outbox_oldest_pending_seconds")).toBe(0);
    // Its commit watch read as its role may (a watch that failed would leave the fallback poll to publish).
    expect(sample(relayMetrics, "subdata_commit_watch_failures_total")).toBe(0);
    expect(sample(relayMetrics, "subdata_commit_watch_unresolved_positions")).toBe(0);

    // Trace context: each event starts a trace at the relay, and its traceparent travels as a header
    // of the JetStream message (the consumer reads it into its log lines and stores it with the event).
    const published = relay.lines.find((line) => line.msg === "event published" && line.eventId === eventIds[0]);
    expect(published?.traceId).toMatch(/^[0-9a-f]{32}$/);
    const traceId = String(published!.traceId);
    const nc = await connect({ servers: inject("natsUrl") });
    let relayedTraceparent: string | undefined;
    try {
      const message = await (await jetstreamManager(nc)).streams.getMessage(stream, { seq: Number(published!.seq) });
      relayedTraceparent = message?.header.get("traceparent");
      expect(relayedTraceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    } finally {
      await nc.close();
    }
    // …and reaches the receiver: the POST continues the relay's trace with a span of its own, and the
    // webhook service's attempt line names the same trace and span.
    const posted = receiver.requests.find((request) => request.headers["webhook-id"] === eventIds[0]);
    const postedTraceparent = String(posted?.headers.traceparent);
    expect(postedTraceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(postedTraceparent).not.toBe(relayedTraceparent);
    const attemptLine = [...first.lines, ...second.lines].find((line) => line.msg === "webhook attempt" && line.eventId === eventIds[0]);
    expect(attemptLine).toMatchObject({ traceId, spanId: postedTraceparent.split("-")[2] });

    expect(await second.stop()).toEqual({ code: 0, signal: null });
    expect(await relay.stop()).toEqual({ code: 0, signal: null });

    // Spans were flushed on shutdown. Every event's publish is exported by the relay under the ids its
    // message carried, and every POST the receiver got names an exported attempt span whose parent
    // is that publish: no span in the chain points at a parent that was never exported.
    const exported = new Map(collector.spans.map((span) => [span.spanId, span]));
    const producers = collector.spans.filter((span) => span.service === "subdata-relay" && span.kind === 4);
    expect(new Set(producers.map((span) => span.attributes["messaging.message.id"]))).toEqual(new Set(eventIds));
    expect(producers.find((span) => span.attributes["messaging.message.id"] === eventIds[0])).toMatchObject({
      traceId,
      spanId: relayedTraceparent!.split("-")[2],
      attributes: { "messaging.system": "nats", "messaging.destination.name": `${subjectPrefix}.subscription.${merchantId}` },
    });
    // Ingest is a CONSUMER span of each event, a child of its publish in the same trace.
    for (const producer of producers) {
      const consumers = collector.spans.filter((span) => span.kind === 5 && span.parentSpanId === producer.spanId);
      expect(consumers.length, String(producer.attributes["messaging.message.id"])).toBeGreaterThan(0);
      for (const consumer of consumers) {
        expect(consumer).toMatchObject({ service: "subdata-webhook", traceId: producer.traceId });
        expect(consumer.attributes["messaging.message.id"]).toBe(producer.attributes["messaging.message.id"]);
      }
    }
    for (const request of receiver.requests) {
      const [, requestTraceId, requestSpanId] = String(request.headers.traceparent).split("-");
      const attempt: CollectedSpan | undefined = exported.get(requestSpanId!);
      expect(attempt).toMatchObject({ service: "subdata-webhook", kind: 3, traceId: requestTraceId, status: { code: 0 } });
      expect(attempt!.attributes).toMatchObject({ "subdata.event_id": request.headers["webhook-id"], "http.response.status_code": "200" });
      expect(exported.get(attempt!.parentSpanId!)).toMatchObject({ service: "subdata-relay", kind: 4, traceId: requestTraceId });
    }
  });
});
