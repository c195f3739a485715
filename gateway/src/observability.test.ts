import { randomBytes } from "node:crypto";
import { createHealthState, createMetrics, createTraceScope, type HealthState, type Registry, unavailable } from "@subdata/runtime";
import { beforeEach, describe, expect, it } from "vitest";
import { createApiKeyCache } from "./api-key-cache.ts";
import { loadGatewayConfig } from "./config.ts";
import { createGateway, type Gateway } from "./server.ts";
import { createFakeUpstreams, type FakeUpstreams } from "./test-support/fake-upstreams.ts";
import { KEY, KEY_ID, MERCHANT } from "./test-support/test-gateway.ts";
import { type CapturedSpan, createCapturedLogger, createCapturedSpans } from "@subdata/runtime/test-support";

let gateway: Gateway;
let fake: FakeUpstreams;
let metrics: Registry;
let health: HealthState;
let logs: string[];
let spans: CapturedSpan[];

beforeEach(() => {
  logs = [];
  const trace = createTraceScope();
  const captured = createCapturedSpans("subdata-gateway");
  spans = captured.spans;
  const capturedLogs = createCapturedLogger({ name: "gateway", level: "debug", context: trace.logFields });
  const logger = capturedLogs.logger;
  logs = capturedLogs.lines;
  fake = createFakeUpstreams();
  fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT });
  const apiKeyCache = createApiKeyCache({ ttlMs: 60_000, maxEntries: 100, now: Date.now });
  apiKeyCache.setTrusted(true);
  metrics = createMetrics({ service: "gateway", defaultMetrics: false });
  health = createHealthState();
  gateway = createGateway({
    clients: fake.clients,
    logger,
    config: loadGatewayConfig({ SUBDATA_GATEWAY_TOKEN: randomBytes(24).toString("base64url") }),
    apiKeyCache,
    metrics,
    trace,
    tracing: captured.tracing,
    health,
  });
});

describe("probes", () => {
  it("answers /livez always and /readyz until the process stops serving, without a key", async () => {
    expect((await gateway.inject({ url: "/livez" })).statusCode).toBe(200);
    expect((await gateway.inject({ url: "/readyz" })).statusCode).toBe(200);
    health.setServing(false);
    const notReady = await gateway.inject({ url: "/readyz" });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.headers["cache-control"]).toBe("no-store");
    expect((await gateway.inject({ url: "/livez" })).statusCode).toBe(200);
  });
});

describe("metrics", () => {
  it("counts and times requests by method, route template and status", async () => {
    await gateway.inject({ url: "/api/v1/subscriptions/sub_x", headers: { authorization: `Bearer ${KEY}` } });
    await gateway.inject({ url: "/api/v1/subscriptions", headers: { authorization: `Bearer ${KEY}` } });
    await gateway.inject({ url: "/api/v1/subscriptions" });
    await gateway.inject({ url: "/nowhere/at/all" });
    const requests = (await metrics.getSingleMetric("subdata_http_requests_total")!.get()).values.map((value) => ({
      ...value.labels,
      value: value.value,
    }));
    expect(requests).toEqual(
      expect.arrayContaining([
        { method: "GET", route: "/v1/subscriptions/{id}", status: "404", value: 1 },
        { method: "GET", route: "/v1/subscriptions", status: "200", value: 1 },
        { method: "GET", route: "/v1/subscriptions", status: "401", value: 1 },
        { method: "GET", route: "unmatched", status: "404", value: 1 },
      ]),
    );
    const text = await metrics.metrics();
    expect(text).toContain("subdata_http_request_duration_seconds_bucket");
    // The two authenticated requests each waited for an audit record; the unauthenticated one and the
    // unmatched route wrote none.
    expect(text).toContain('subdata_gateway_audit_wait_seconds_count{component="gateway"} 2');
    const batches = (await metrics.getSingleMetric("subdata_gateway_audit_batch_reads")!.get()).values;
    const readsSum = batches.find((value) => (value as { metricName?: string }).metricName === "subdata_gateway_audit_batch_reads_sum");
    expect(readsSum).toMatchObject({ value: 2, labels: { outcome: "ok" } });
  });
});

describe("logs", () => {
  it("carry the request id and the caller's trace on every line of a request, and never the key", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await gateway.inject({
      url: "/api/v1/subscriptions",
      headers: { authorization: `Bearer ${KEY}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01`, "request-id": "req_spoofed" },
    });
    const requestId = response.headers["request-id"];
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
    const lines = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.reqId === requestId);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatchObject({ reqId: requestId, requestId, traceId });
    expect(logs.join("")).not.toContain(KEY);
    expect(logs.join("")).not.toContain("req_spoofed");
  });
});

describe("spans", () => {
  it("make each request a SERVER span, a child of the caller's, named after its route template, with no query string, key or cursor", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await gateway.inject({
      url: "/api/v1/subscriptions?limit=2&status=ACTIVE",
      headers: { authorization: `Bearer ${KEY}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(response.statusCode).toBe(200);
    await gateway.inject({ url: "/livez" });
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      traceId,
      parentSpanId: "00f067aa0ba902b7",
      kind: "server",
      name: "GET /v1/subscriptions",
      service: "subdata-gateway",
      error: false,
      attributes: {
        "http.request.method": "GET",
        "http.route": "/v1/subscriptions",
        "http.response.status_code": 200,
        "subdata.request_id": response.headers["request-id"],
      },
    });
    expect(JSON.stringify(spans)).not.toMatch(new RegExp(`${KEY}|status=ACTIVE|limit=`));
  });

  it("do not record a request whose caller's trace is not sampled", async () => {
    await gateway.inject({
      url: "/api/v1/subscriptions",
      headers: { authorization: `Bearer ${KEY}`, traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" },
    });
    expect(spans).toEqual([]);
  });
});

describe("audit refusal logs", () => {
  it("name the first read refused for want of an audit record and sum up the rest in one line, while the metric counts each", async () => {
    fake.behaviour.recordRead = async () => {
      throw unavailable("audit log");
    };
    const get = () => gateway.inject({ url: "/api/v1/subscriptions", headers: { authorization: `Bearer ${KEY}` } });
    const first = await get();
    const rest = await Promise.all(Array.from({ length: 20 }, get));
    expect([first, ...rest].map((response) => response.statusCode)).toEqual(Array(21).fill(503));
    const refusals = () => logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => String(line.msg).includes("audit record failed"));
    expect(refusals()).toEqual([expect.objectContaining({ reqId: first.headers["request-id"], reason: "failed", msg: "audit record failed; answering 503" })]);
    expect(await metrics.getSingleMetricAsString("subdata_gateway_audit_refused_total")).toContain(
      'subdata_gateway_audit_refused_total{reason="failed",component="gateway"} 21',
    );
    // Within the interval the rest are only counted; closing logs their count rather than losing it.
    await gateway.close();
    expect(refusals().slice(1)).toEqual([expect.objectContaining({ refused: 20, reasons: { failed: 20 } })]);
  });
});
