import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { AttemptErrorClass, DeliveryStatus } from "@subdata/proto/subdata/webhook/v1/delivery_pb";
import { EndpointSchema, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import { errorDetailOf, ErrorReason } from "@subdata/runtime";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminPool, fixturesOf, insertWebhookEvent, type RunningWebhookServer, startWebhookServer } from "./webhook-server.ts";
import { rpcError } from "@subdata/runtime/test-support";

type WebhookBody = Record<string, unknown> & { data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> } };

let server: RunningWebhookServer;
let db: pg.Pool;

beforeAll(async () => {
  db = adminPool();
  server = await startWebhookServer();
});

afterAll(async () => {
  await server?.stop();
  await db?.end();
});

const at = (iso: string) => {
  const millis = Date.parse(iso);
  return create(TimestampSchema, { seconds: BigInt(Math.floor(millis / 1000)), nanos: (millis % 1000) * 1_000_000 });
};

async function merchantWithEndpoint(eventTypes: EventType[] = []) {
  const merchantId = await fixturesOf(db).merchant();
  const created = await server.endpoints.createEndpoint({ merchantId, url: "https://93.184.215.14/hooks", eventTypes });
  return { merchantId, endpointId: created.endpoint!.id };
}

async function deliveryRows(endpointId: string) {
  const rows = await db.query<{ id: string; event_id: string; status: string; attempt_count: number; due: boolean; next_attempt_at: string }>(
    `SELECT id, event_id, status, attempt_count, next_attempt_at <= now() + interval '1 second' AS due,
       to_char(next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS next_attempt_at
     FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY next_attempt_at, id`,
    [endpointId],
  );
  return rows.rows;
}

describe("ResendEvent", () => {
  it("creates a PENDING delivery due now with the original event id", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    const eventId = await insertWebhookEvent(db, { merchantId, occurredAt: "2026-02-01 10:00:00+00", version: 3 });
    const wakesBefore = server.wakeCount();
    const { delivery } = await server.deliveries.resendEvent({ merchantId, endpointId, eventId });
    expect(delivery).toMatchObject({ endpointId, eventId, status: DeliveryStatus.PENDING, version: 3n, eventType: EventType.SUBSCRIPTION_UPDATED });
    expect(delivery!.id).toMatch(/^whd_/);
    expect(await deliveryRows(endpointId)).toMatchObject([{ id: delivery!.id, event_id: eventId, status: "PENDING", due: true }]);
    expect(server.wakeCount()).toBe(wakesBefore + 1);
  });

  it("resets an existing delivery to PENDING and keeps its attempt history", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    const eventId = await insertWebhookEvent(db, { merchantId, occurredAt: "2026-02-01 10:00:00+00" });
    const first = (await server.deliveries.resendEvent({ merchantId, endpointId, eventId })).delivery!;
    // As the pipeline would leave it after exhausting its retries.
    await db.query(
      `UPDATE webhook_deliveries SET status = 'FAILED', attempt_count = 2, last_attempt_at = now(), next_attempt_at = now() + interval '1 day' WHERE id = $1`,
      [first.id],
    );
    await db.query(
      `INSERT INTO webhook_attempts (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body)
       VALUES ($1, $2, 1, '2026-02-01 10:00:01+00', 1500, 500, 'HTTP_STATUS', 'oops'),
              ($1, $2, 2, '2026-02-01 10:00:07+00', 15000000, NULL, 'TIMEOUT', '')`,
      [first.id, merchantId],
    );

    const again = (await server.deliveries.resendEvent({ merchantId, endpointId, eventId })).delivery!;
    expect(again).toMatchObject({ id: first.id, eventId, status: DeliveryStatus.PENDING, attemptCount: 2 });
    expect(await deliveryRows(endpointId)).toMatchObject([{ id: first.id, status: "PENDING", due: true }]);

    const attempts = await server.deliveries.listAttempts({ merchantId, deliveryId: first.id });
    expect(attempts.attempts.map((attempt) => [attempt.attemptNumber, attempt.responseStatus, attempt.errorClass])).toEqual([
      [1, 500, AttemptErrorClass.HTTP_STATUS],
      [2, 0, AttemptErrorClass.TIMEOUT],
    ]);
    expect(attempts.attempts[1]!.latency).toMatchObject({ seconds: 15n, nanos: 0 });
    expect(attempts.attempts[0]!.responseBody).toBe("oops");
  });

  it("answers NOT_FOUND for another merchant's event", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    const other = await fixturesOf(db).merchant();
    const eventId = await insertWebhookEvent(db, { merchantId: other, occurredAt: "2026-02-01 10:00:00+00" });
    const error = await rpcError(server.deliveries.resendEvent({ merchantId, endpointId, eventId }));
    expect(error.code).toBe(Code.NotFound);
    expect(await deliveryRows(endpointId)).toEqual([]);
  });
});

describe("ReplayEvents", () => {
  it("schedules the endpoint's event types in [start, end), in order, with the original ids", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint([EventType.SUBSCRIPTION_CREATED, EventType.SUBSCRIPTION_UPDATED]);
    const other = await fixturesOf(db).merchant();
    const subscriptionId = "sub_0123456789abcdef0123456789abcdef";
    const before = await insertWebhookEvent(db, { merchantId, subscriptionId, occurredAt: "2026-03-01 09:59:59.999999+00", type: "subscription.created" });
    const inRange = [
      await insertWebhookEvent(db, { merchantId, subscriptionId, occurredAt: "2026-03-01 10:00:00+00", type: "subscription.created", version: 1 }),
      await insertWebhookEvent(db, { merchantId, occurredAt: "2026-03-01 10:30:00+00" }),
      await insertWebhookEvent(db, { merchantId, subscriptionId, occurredAt: "2026-03-01 11:00:00.000001+00", version: 2 }),
    ];
    const notSubscribed = await insertWebhookEvent(db, { merchantId, occurredAt: "2026-03-01 10:45:00+00", type: "subscription.deleted" });
    const atEnd = await insertWebhookEvent(db, { merchantId, occurredAt: "2026-03-01 12:00:00+00" });
    const otherMerchants = await insertWebhookEvent(db, { merchantId: other, occurredAt: "2026-03-01 10:15:00+00" });
    // A test event in the range is not replayed.
    await server.endpoints.sendTestEvent({ merchantId, endpointId });
    await db.query("UPDATE webhook_events SET occurred_at = '2026-03-01 10:20:00+00' WHERE merchant_id = $1 AND resource_id LIKE 'sub_test_%'", [merchantId]);
    await db.query("DELETE FROM webhook_attempts WHERE merchant_id = $1", [merchantId]);
    await db.query("UPDATE webhook_deliveries SET status = 'SUCCEEDED' WHERE merchant_id = $1", [merchantId]);

    // One of them was already delivered: replay resets it rather than adding a second delivery.
    const delivered = (await server.deliveries.resendEvent({ merchantId, endpointId, eventId: inRange[1]! })).delivery!;
    await db.query("UPDATE webhook_deliveries SET status = 'SUCCEEDED', delivered_at = now(), attempt_count = 1 WHERE id = $1", [delivered.id]);

    const response = await server.deliveries.replayEvents({
      merchantId,
      endpointId,
      startTime: at("2026-03-01T10:00:00.000Z"),
      endTime: at("2026-03-01T12:00:00.000Z"),
    });
    expect(response.scheduledCount).toBe(3);

    const pending = (await deliveryRows(endpointId)).filter((row) => row.status === "PENDING");
    expect(pending.map((row) => row.event_id)).toEqual(inRange);
    expect(pending.every((row) => row.due)).toBe(true);
    expect(pending.find((row) => row.event_id === inRange[1])!.id).toBe(delivered.id);
    const all = (await deliveryRows(endpointId)).map((row) => row.event_id);
    for (const id of [before, notSubscribed, atEnd, otherMerchants]) expect(all).not.toContain(id);
  });

  it("refuses ranges that are empty, reversed or longer than 31 days", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    for (const [start, end] of [
      ["2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z"],
      ["2026-03-02T10:00:00Z", "2026-03-01T10:00:00Z"],
      ["2026-01-01T00:00:00Z", "2026-02-01T00:00:01Z"],
    ] as const) {
      const error = await rpcError(server.deliveries.replayEvents({ merchantId, endpointId, startTime: at(start), endTime: at(end) }));
      expect(error.code).toBe(Code.InvalidArgument);
    }
    const missing = await rpcError(server.deliveries.replayEvents({ merchantId, endpointId }));
    expect(errorDetailOf(missing)?.fieldViolations[0]?.field).toBe("start_time");
  });
});

describe("SendTestEvent", () => {
  it("stores a marked subscription.updated event and one PENDING delivery of it", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    const response = await server.endpoints.sendTestEvent({ merchantId, endpointId });
    expect(response.eventId).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(response.deliveryId).toMatch(/^whd_[0-9a-f]{32}$/);

    const event = await db.query<{ merchant_id: string; resource_id: string; type: string; body: string }>(
      "SELECT merchant_id, resource_id, type, body FROM webhook_events WHERE id = $1",
      [response.eventId],
    );
    const row = event.rows[0]!;
    expect(row).toMatchObject({ merchant_id: merchantId, type: "subscription.updated" });
    expect(row.resource_id).toMatch(/^sub_test_/);
    const body = JSON.parse(row.body) as WebhookBody;
    expect(body).toMatchObject({ id: response.eventId, type: "subscription.updated", test: true });
    expect(body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(body.data.object).toMatchObject({ id: row.resource_id, object: "subscription", status: "ACTIVE", version: 2 });
    expect(body.data.object.price).toEqual({ amount: "19.99", currency: "USD" });
    // Like a real update's, the previous attributes never list version.
    expect(body.data.previous_attributes).toMatchObject({ status: "TRIALING" });
    expect(body.data.previous_attributes).not.toHaveProperty("version");

    expect(await deliveryRows(endpointId)).toMatchObject([{ id: response.deliveryId, event_id: response.eventId, status: "PENDING", due: true }]);
    const listed = await server.deliveries.listDeliveries({ merchantId, endpointId });
    expect(listed.deliveries.map((delivery) => delivery.id)).toEqual([response.deliveryId]);
  });

  it("refuses a disabled endpoint", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    await server.endpoints.updateEndpoint({
      merchantId,
      endpoint: create(EndpointSchema, { id: endpointId, status: EndpointStatus.DISABLED }),
      updateMask: create(FieldMaskSchema, { paths: ["status"] }),
    });
    const error = await rpcError(server.endpoints.sendTestEvent({ merchantId, endpointId }));
    expect(error.code).toBe(Code.FailedPrecondition);
  });
});

describe("ListDeliveries", () => {
  it("pages newest first, filters by status, and binds tokens to the filter", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await server.endpoints.sendTestEvent({ merchantId, endpointId })).deliveryId);
    await db.query("UPDATE webhook_deliveries SET status = 'SUCCEEDED' WHERE id = ANY ($1)", [[ids[0], ids[3]]]);

    const seen: string[] = [];
    let pageToken = "";
    for (let page = 0; page < 10; page++) {
      const response = await server.deliveries.listDeliveries({ merchantId, endpointId, pageSize: 2, pageToken });
      seen.push(...response.deliveries.map((delivery) => delivery.id));
      pageToken = response.nextPageToken;
      if (pageToken === "") break;
    }
    expect(seen).toEqual([...ids].reverse());

    const succeeded = await server.deliveries.listDeliveries({ merchantId, endpointId, status: DeliveryStatus.SUCCEEDED, pageSize: 1 });
    expect(succeeded.deliveries.map((delivery) => delivery.id)).toEqual([ids[3]]);
    const next = await server.deliveries.listDeliveries({
      merchantId,
      endpointId,
      status: DeliveryStatus.SUCCEEDED,
      pageSize: 1,
      pageToken: succeeded.nextPageToken,
    });
    expect(next.deliveries.map((delivery) => delivery.id)).toEqual([ids[0]]);
    const wrongFilter = await rpcError(
      server.deliveries.listDeliveries({ merchantId, endpointId, status: DeliveryStatus.PENDING, pageToken: succeeded.nextPageToken }),
    );
    expect(errorDetailOf(wrongFilter)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
  });
});

describe("SummarizeDeliveries", () => {
  it("counts the endpoint's attempts of the last 24 hours per hour, succeeded and failed, with latency p50 and p95", async () => {
    const { merchantId, endpointId } = await merchantWithEndpoint();
    const other = await merchantWithEndpoint();
    const recent = (await server.endpoints.sendTestEvent({ merchantId, endpointId })).deliveryId;
    const old = (await server.endpoints.sendTestEvent({ merchantId, endpointId })).deliveryId;
    const foreign = (await server.endpoints.sendTestEvent({ merchantId: other.merchantId, endpointId: other.endpointId })).deliveryId;
    const hourStart = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    // Two hours ago: two 2xx and a 500; five hours ago: one timeout; three days ago (outside): one 2xx.
    const attempts: Array<[string, string, number, number | null]> = [
      [recent, new Date(hourStart - 2 * 3_600_000 + 60_000).toISOString(), 10_000, 200],
      [recent, new Date(hourStart - 2 * 3_600_000 + 120_000).toISOString(), 30_000, 204],
      [recent, new Date(hourStart - 2 * 3_600_000 + 180_000).toISOString(), 20_000, 500],
      [recent, new Date(hourStart - 5 * 3_600_000 + 60_000).toISOString(), 15_000_000, null],
      [old, new Date(hourStart - 72 * 3_600_000).toISOString(), 1_000, 200],
      [foreign, new Date(hourStart - 2 * 3_600_000 + 60_000).toISOString(), 5_000, 200],
    ];
    for (const [index, [deliveryId, startedAt, latency, status]] of attempts.entries()) {
      const owner = deliveryId === foreign ? other.merchantId : merchantId;
      await db.query(
        `INSERT INTO webhook_attempts (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body)
         VALUES ($1, $2, $3, $4, $5, $6, $7, '')`,
        [deliveryId, owner, index + 1, startedAt, latency, status, status === null ? "TIMEOUT" : status < 300 ? "NONE" : "HTTP_STATUS"],
      );
    }
    await db.query(
      `UPDATE webhook_deliveries d SET last_attempt_at = (SELECT max(started_at) FROM webhook_attempts a WHERE a.delivery_id = d.id)
       WHERE id = ANY ($1)`,
      [[recent, old, foreign]],
    );

    const summary = await server.deliveries.summarizeDeliveries({ merchantId, endpointId });
    expect(summary.hours).toHaveLength(24);
    const start = Number(summary.startTime!.seconds) * 1000;
    expect(start % 3_600_000).toBe(0);
    expect(summary.hours.map((hour) => Number(hour.startTime!.seconds) * 1000)).toEqual(Array.from({ length: 24 }, (_, i) => start + i * 3_600_000));
    const at = (iso: string) => summary.hours[Math.floor((Date.parse(iso) - start) / 3_600_000)]!;
    const twoHoursAgo = at(attempts[0]![1]);
    expect(twoHoursAgo).toMatchObject({ succeededCount: 2, failedCount: 1 });
    expect(twoHoursAgo.latencyP50).toMatchObject({ seconds: 0n, nanos: 20_000_000 });
    expect(twoHoursAgo.latencyP95).toMatchObject({ seconds: 0n, nanos: 30_000_000 });
    const fiveHoursAgo = at(attempts[3]![1]);
    expect(fiveHoursAgo).toMatchObject({ succeededCount: 0, failedCount: 1 });
    expect(fiveHoursAgo.latencyP95).toMatchObject({ seconds: 15n, nanos: 0 });
    const totals = summary.hours.reduce((sum, hour) => sum + hour.succeededCount + hour.failedCount, 0);
    expect(totals).toBe(4);
    expect(summary.hours.filter((hour) => hour.latencyP50 === undefined)).toHaveLength(22);
  });
});

describe("tenant isolation", () => {
  it("answers NOT_FOUND for another merchant's endpoint or delivery on every RPC, and lists never cross", async () => {
    const owner = await merchantWithEndpoint();
    const intruder = await merchantWithEndpoint();
    const test = await server.endpoints.sendTestEvent({ merchantId: owner.merchantId, endpointId: owner.endpointId });
    const eventId = await insertWebhookEvent(db, { merchantId: owner.merchantId, occurredAt: "2026-04-01 00:00:00+00" });
    const merchantId = intruder.merchantId;
    const endpointId = owner.endpointId;
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["GetEndpoint", () => server.endpoints.getEndpoint({ merchantId, endpointId })],
      [
        "UpdateEndpoint",
        () =>
          server.endpoints.updateEndpoint({
            merchantId,
            endpoint: create(EndpointSchema, { id: endpointId, description: "mine now" }),
            updateMask: create(FieldMaskSchema, { paths: ["description"] }),
          }),
      ],
      ["DeleteEndpoint", () => server.endpoints.deleteEndpoint({ merchantId, endpointId })],
      ["RotateSecret", () => server.endpoints.rotateSecret({ merchantId, endpointId })],
      ["SendTestEvent", () => server.endpoints.sendTestEvent({ merchantId, endpointId })],
      ["ListDeliveries", () => server.deliveries.listDeliveries({ merchantId, endpointId })],
      ["ListAttempts", () => server.deliveries.listAttempts({ merchantId, deliveryId: test.deliveryId })],
      ["ResendEvent", () => server.deliveries.resendEvent({ merchantId, endpointId, eventId })],
      ["ResendEvent (own endpoint, their event)", () => server.deliveries.resendEvent({ merchantId, endpointId: intruder.endpointId, eventId })],
      ["SummarizeDeliveries", () => server.deliveries.summarizeDeliveries({ merchantId, endpointId })],
      [
        "ReplayEvents",
        () => server.deliveries.replayEvents({ merchantId, endpointId, startTime: at("2026-03-20T00:00:00Z"), endTime: at("2026-04-10T00:00:00Z") }),
      ],
    ];
    for (const [name, call] of calls) {
      const error = await rpcError(call());
      expect({ name, code: Code[error.code] }).toEqual({ name, code: "NotFound" });
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.NOT_FOUND);
    }
    const unknown = await rpcError(server.endpoints.getEndpoint({ merchantId, endpointId: "we_00000000000000000000000000000000" }));
    expect(unknown.rawMessage).toBe((await rpcError(server.endpoints.getEndpoint({ merchantId, endpointId }))).rawMessage);

    const got = await server.endpoints.getEndpoint({ merchantId: owner.merchantId, endpointId });
    expect(got.endpoint!.description).toBe("");
    expect((await server.endpoints.listEndpoints({ merchantId })).endpoints.map((endpoint) => endpoint.id)).toEqual([intruder.endpointId]);
    const ownerDeliveries = await server.deliveries.listDeliveries({ merchantId: owner.merchantId, endpointId });
    expect(ownerDeliveries.deliveries.map((delivery) => delivery.id)).toEqual([test.deliveryId]);
    expect((await server.deliveries.listDeliveries({ merchantId, endpointId: intruder.endpointId })).deliveries).toEqual([]);
  });
});
