import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createServiceTransport } from "@subdata/runtime";
import { createCallerTokens } from "@subdata/runtime/test-support";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures } from "../support/fixtures.ts";
import { startCollector } from "./support/otlp-collector.ts";
import { waitFor } from "../support/wait-for.ts";
import { listeningPorts, type RunningProcess, sample, scrape, startProcess } from "./support/process.ts";

/**
 * The read path as real processes (query, auth, gateway), a loop of concurrent requests with a valid
 * key, and SIGTERM to the gateway mid-load. A well-behaved load balancer is modelled by the load
 * loop: it stops sending new requests once GET /readyz answers 503. Every request sent must succeed.
 * A stub OTLP collector receives the spans the processes export on the way.
 */

describe("gateway lifecycle under load", () => {
  const callers = createCallerTokens();
  const common = {
    ...callers.environment,
    SUBDATA_PAGE_TOKEN_SECRET: randomBytes(24).toString("hex"),
    NATS_URL: inject("natsUrl"),
  };
  const processes: RunningProcess[] = [];
  let admin: pg.Pool;

  beforeAll(() => {
    admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  });
  afterAll(async () => {
    for (const proc of processes) proc.kill();
    await admin.end();
  });

  it("serves through the shutdown delay, drains, exits 0, and every request sent succeeds", async () => {
    const collector = await startCollector();
    const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
    const query = startProcess("query", "services/query/src/main.ts", {
      ...common,
      ...otlp,
      DATABASE_URL: inject("roleDatabaseUrls").query,
      LOG_LEVEL: "debug",
    });
    const auth = startProcess("auth", "services/auth/src/main.ts", { ...common, DATABASE_URL: inject("roleDatabaseUrls").auth });
    processes.push(query, auth);
    const [queryPorts, authPorts] = await Promise.all([listeningPorts(query), listeningPorts(auth)]);
    const gateway = startProcess("gateway", "gateway/src/main.ts", {
      ...common,
      ...otlp,
      SUBDATA_QUERY_URL: `http://127.0.0.1:${queryPorts.port}`,
      SUBDATA_AUTH_URL: `http://127.0.0.1:${authPorts.port}`,
      SUBDATA_RATE_LIMIT_QUOTA: "100000",
      SUBDATA_SHUTDOWN_DELAY_MS: "1500",
    });
    processes.push(gateway);
    const gatewayPorts = await listeningPorts(gateway);
    const base = `http://127.0.0.1:${gatewayPorts.port}`;

    const fixtures = createFixtures(admin);
    const merchantId = await fixtures.merchant();
    for (let i = 0; i < 3; i++) await fixtures.subscription({ merchantId });
    const authTransport = createServiceTransport({ baseUrl: `http://127.0.0.1:${authPorts.port}`, serviceToken: callers.tokens.app });
    const created = await createClient(ApiKeyService, authTransport.transport).createApiKey({ merchantId, name: "lifecycle" });
    authTransport.close();
    const key = created.key;

    expect((await fetch(`${base}/livez`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    const traceId = randomBytes(16).toString("hex");
    const callerSpanId = randomBytes(8).toString("hex");
    const headers = { authorization: `Bearer ${key}`, traceparent: `00-${traceId}-${callerSpanId}-01` };
    const results: Array<{ status: number; requestId: string | null; afterNotReady: boolean }> = [];
    const errors: unknown[] = [];
    let notReady = false;
    // Each worker sends one last request after readiness failed: a load balancer notices with some
    // delay, and the gateway must still serve during SUBDATA_SHUTDOWN_DELAY_MS.
    const worker = async () => {
      for (;;) {
        const afterNotReady = notReady;
        try {
          const response = await fetch(`${base}/api/v1/subscriptions?limit=2`, { headers });
          await response.arrayBuffer();
          results.push({ status: response.status, requestId: response.headers.get("request-id"), afterNotReady });
        } catch (error) {
          errors.push(error);
        }
        if (afterNotReady) return;
      }
    };
    const workers = Array.from({ length: 8 }, () => worker());

    await waitFor("requests to flow", () => results.length >= 50);

    // A long poll through the processes: the query service's commit watch, as its own role, wakes it.
    const feedHeaders = { authorization: `Bearer ${key}` };
    const head = (await (await fetch(`${base}/api/v1/events?cursor=head`, { headers: feedHeaders })).json()) as { next_cursor: string };
    // A first, short long poll sets the watch going: its first look has been made when it answers.
    await (await fetch(`${base}/api/v1/events?wait=1&cursor=${encodeURIComponent(head.next_cursor)}`, { headers: feedHeaders })).arrayBuffer();
    const longPoll = fetch(`${base}/api/v1/events?wait=20&cursor=${encodeURIComponent(head.next_cursor)}`, { headers: feedHeaders });
    await waitFor("the query service watching commits", async () => {
      const { rows } = await admin.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'subdata-query-changes'");
      return rows.length > 0;
    });
    const { rows: changed } = await admin.query<{ id: string }>(
      "UPDATE subscriptions SET quantity = quantity + 1 WHERE id = (SELECT id FROM subscriptions WHERE merchant_id = $1 LIMIT 1) RETURNING id",
      [merchantId],
    );
    const fed = (await (await longPoll).json()) as { data: Array<{ type: string; data: { object: { id: string } } }> };
    expect(fed.data.map((event) => [event.type, event.data.object.id])).toEqual([["subscription.updated", changed[0]!.id]]);

    // Metrics after real requests, on each process's own metrics port.
    const [gatewayMetrics, queryMetrics, authMetrics] = await Promise.all([
      scrape(gatewayPorts.metricsPort),
      scrape(queryPorts.metricsPort),
      scrape(authPorts.metricsPort),
    ]);
    expect(sample(gatewayMetrics, "subdata_http_requests_total", { route: "/v1/subscriptions", method: "GET", status: "200" })).toBeGreaterThan(0);
    expect(sample(gatewayMetrics, "subdata_http_request_duration_seconds_count", { route: "/v1/subscriptions" })).toBeGreaterThan(0);
    expect(sample(gatewayMetrics, "nodejs_eventloop_lag_p99_seconds", { component: "gateway" })).toBeDefined();
    expect(sample(queryMetrics, "subdata_rpc_server_requests_total", { rpc_method: "ListSubscriptions", code: "ok" })).toBeGreaterThan(0);
    expect(sample(queryMetrics, "subdata_rpc_server_duration_seconds_count", { rpc_method: "ListSubscriptions" })).toBeGreaterThan(0);
    expect(sample(queryMetrics, "subdata_db_pool_connections", { state: "waiting" })).toBeDefined();
    expect(sample(queryMetrics, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(sample(queryMetrics, "subdata_commit_watch_failures_total")).toBe(0);
    expect(sample(authMetrics, "subdata_rpc_server_requests_total", { rpc_method: "RecordReads", code: "ok" })).toBeGreaterThan(0);
    expect(sample(authMetrics, "subdata_audit_batch_size_count", { outcome: "ok" })).toBeGreaterThan(0);
    expect(sample(authMetrics, "subdata_audit_flushes_total", { outcome: "error" })).toBe(0);

    gateway.child.kill("SIGTERM");
    // The load balancer: probe readiness, stop sending once it fails.
    let sawNotReady = false;
    while (!sawNotReady) {
      const probe = await fetch(`${base}/readyz`).catch(() => undefined);
      await probe?.arrayBuffer();
      if (probe?.status === 503) sawNotReady = true;
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    notReady = true;
    await Promise.all(workers);
    const exit = await gateway.exited;

    expect(errors).toEqual([]);
    expect(results.filter((result) => result.status !== 200)).toEqual([]);
    expect(results.filter((result) => result.afterNotReady)).toHaveLength(8);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(gateway.lines.some((line) => line.msg === "stopped")).toBe(true);

    // Every request log line carries the request id (Fastify's reqId = the Request-Id returned) and our trace.
    const returned = new Set(results.map((result) => result.requestId));
    const requestLines = gateway.lines.filter((line) => line.msg === "request" && line.route === "/v1/subscriptions");
    expect(requestLines.length).toBe(results.length);
    for (const line of requestLines) {
      expect(returned.has(line.reqId as string)).toBe(true);
      expect(line).toMatchObject({ requestId: line.reqId, traceId });
    }
    // The query service logged the same request id and trace: they were passed upstream.
    const upstreamLine = await query.waitForLine((line) => line.msg === "rpc ok" && line.traceId === traceId, "a traced rpc line");
    expect(returned.has(upstreamLine.requestId as string)).toBe(true);

    // The key never reaches a log, in any process.
    for (const proc of [gateway, query, auth]) {
      expect(proc.output()).not.toContain(key);
      for (const token of Object.values(callers.tokens)) expect(proc.output()).not.toContain(token);
    }

    // The services stop cleanly too: health off, GOAWAY, drain, pools closed.
    expect(await query.stop()).toEqual({ code: 0, signal: null });
    expect(await auth.stop()).toEqual({ code: 0, signal: null });

    // Spans were flushed on shutdown: gateway request spans are children of the caller's span, and
    // the query service's RPC spans children of a gateway span of the same trace.
    const gatewaySpans = collector.spans.filter((span) => span.service === "subdata-gateway" && span.name === "GET /v1/subscriptions");
    expect(gatewaySpans.length).toBe(results.length);
    for (const span of gatewaySpans) expect(span).toMatchObject({ traceId, parentSpanId: callerSpanId });
    const querySpans = collector.spans.filter((span) => span.service === "subdata-query");
    // The three feed reads (the head, then two long polls) are traces of their own.
    expect(querySpans.filter((span) => span.name === "subdata.events.v1.EventService/ListEvents")).toHaveLength(3);
    const rpcSpans = querySpans.filter((span) => span.name !== "subdata.events.v1.EventService/ListEvents");
    expect(rpcSpans.length).toBeGreaterThan(0);
    const gatewaySpanIds = new Set(gatewaySpans.map((span) => span.spanId));
    for (const span of rpcSpans) {
      expect(span).toMatchObject({ traceId, name: "subdata.subscription.v1.SubscriptionService/ListSubscriptions" });
      expect(gatewaySpanIds.has(span.parentSpanId!)).toBe(true);
    }
    await collector.close();
  });
});
