import net from "node:net";
import { create } from "@bufbuild/protobuf";
import { DurationSchema, FieldMaskSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { createPool, errorDetailOf } from "@subdata/runtime";
import { rpcError } from "@subdata/runtime/test-support";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestGateway, KEY } from "@subdata/gateway/test-support";
import { type GatewayHarness, startGatewayHarness } from "../gateway/gateway-harness.ts";
import { type RunningWebhookServer, startWebhookServer } from "../webhook-api/webhook-server.ts";

/**
 * Hostile traffic below the routes (oversized and malformed headers, slow clients on a real socket),
 * hostile RPC fields at the internal services, and the deadlines that bound slow dependencies.
 */

/** Writes `request` on a fresh socket and resolves with the first line of what comes back. */
function rawStatusLine(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    let received = "";
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer")));
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (received.includes("\r\n")) {
        socket.destroy();
        resolve(received.split("\r\n")[0]!);
      }
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(received.split("\r\n")[0] ?? ""));
  });
}

describe("transport limits at the gateway (real socket)", () => {
  let h: GatewayHarness;
  let port = 0;
  let key = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    await h.gateway.listen({ host: "127.0.0.1", port: 0 });
    port = (h.gateway.server.address() as net.AddressInfo).port;
    const merchantId = await h.fixtures.merchant();
    await h.fixtures.subscription({ merchantId });
    key = (await h.createKey(merchantId)).key;
  });

  afterAll(async () => {
    await h?.close();
  });

  it("an oversized header block is refused with 431, not served and not a 5xx", async () => {
    const line = await rawStatusLine(
      port,
      `GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Big: ${"a".repeat(64 * 1024)}\r\n\r\n`,
    );
    expect(line).toMatch(/^HTTP\/1\.1 431/);
  });

  it("malformed request lines and headers are refused with 400, never a 5xx", async () => {
    for (const request of [
      "GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
      "GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nBad\u0001Name: v\r\n\r\n",
      "GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
      "GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
      "BREW /api/v1/subscriptions HTCPCP/1.0\r\n\r\n",
      "\u0000\u0001\u0002\r\n\r\n",
    ]) {
      const line = await rawStatusLine(port, request);
      expect(line, JSON.stringify(request)).toMatch(/^HTTP\/1\.1 4\d\d/);
    }
  });

  it("slow clients holding 200 half-sent requests do not keep others from being served", async () => {
    const slow: net.Socket[] = [];
    try {
      for (let index = 0; index < 200; index++) {
        const socket = net.connect(port, "127.0.0.1");
        socket.on("error", () => {});
        socket.write("GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nX-Slow: ");
        slow.push(socket);
      }
      // Drip one more byte on each, as slowloris does, then ask normally.
      for (const socket of slow) socket.write("a");
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/subscriptions?limit=1`, {
        headers: { authorization: `Bearer ${key}` },
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("request-id")).toBeTruthy();
      // Node bounds how long a header block may take (headersTimeout): the gateway must not disable it.
      expect(h.gateway.server.headersTimeout).toBeGreaterThan(0);
      expect(h.gateway.server.headersTimeout).toBeLessThanOrEqual(10_000);
      expect(h.gateway.server.requestTimeout).toBeLessThanOrEqual(30_000);
    } finally {
      for (const socket of slow) socket.destroy();
    }
  });
});

describe("deadlines", () => {
  it("an upstream that never answers costs at most the upstream deadline: 503 unavailable, no data", async () => {
    const { gateway, fake } = createTestGateway({ SUBDATA_UPSTREAM_TIMEOUT_MS: "300" });
    fake.behaviour.recordRead = () => new Promise(() => {}); // the audit write hangs
    const response = await gateway.inject({ method: "GET", url: "/api/v1/subscriptions", headers: { authorization: `Bearer ${KEY}` } });
    expect(response.statusCode).toBe(503);
    const problem = JSON.parse(response.body) as Record<string, unknown>;
    expect(problem).toMatchObject({ code: "unavailable", status: 503 });
    expect(problem).not.toHaveProperty("data");
    await gateway.close();
  });

  it("statement_timeout holds on a service role's pool", async () => {
    const pool = createPool({
      connectionString: inject("roleDatabaseUrls").query,
      statementTimeoutMs: 200,
      readOnly: true,
      applicationName: "hostile-timeout",
    });
    try {
      await expect(pool.query("SELECT pg_sleep(5)")).rejects.toMatchObject({ code: "57014" });
      const setting = await pool.query<{ statement_timeout: string }>("SHOW statement_timeout");
      expect(setting.rows[0]!.statement_timeout).toBe("200ms");
    } finally {
      await pool.end();
    }
  });
});

describe("hostile RPC fields", () => {
  let h: GatewayHarness;
  let webhook: RunningWebhookServer;
  let merchantId = "";
  let subscriptionId = "";
  let endpointId = "";
  let apiKeyId = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    // Private targets allowed, so fuzzed URLs are judged without DNS lookups.
    webhook = await startWebhookServer({ allowPrivate: true });
    merchantId = await h.fixtures.merchant();
    subscriptionId = (await h.fixtures.subscription({ merchantId })).id;
    apiKeyId = (await h.createKey(merchantId)).apiKeyId;
    endpointId = (await webhook.endpoints.createEndpoint({ merchantId, url: "http://127.0.0.1:9/hooks" })).endpoint!.id;
  });

  afterAll(async () => {
    await webhook?.stop();
    await h?.close();
  });

  // A bad field is the caller's mistake: InvalidArgument or NotFound, never Internal/Unknown/Unavailable.
  const CALLER_ERRORS = [Code.InvalidArgument, Code.NotFound, Code.Unauthenticated, Code.PermissionDenied];
  async function expectCallerError(call: Promise<unknown>): Promise<void> {
    try {
      await call;
    } catch (error) {
      const connectError = ConnectError.from(error);
      expect(CALLER_ERRORS, `${Code[connectError.code]}: ${connectError.rawMessage}`).toContain(connectError.code);
      expect(connectError.rawMessage).not.toMatch(/\n\s+at |node:internal/);
    }
  }

  // Postgres text refuses NUL anywhere in a string, so NULs go in at every position, not only alone.
  const withNul = fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 })).map(([before, after]) => `${before}\u0000${after}`);
  const text = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.string({ unit: "binary", maxLength: 30 }),
    withNul,
    fc.constantFrom("", "mer_", "\u0000", "mer_\u0000", "sub_\u0000", "we_\u0000", "a".repeat(10_000)),
  );
  /** A valid value half the time, so one hostile field at a time gets past the others and reaches the query. */
  const orValid = <T>(valid: T, hostile: fc.Arbitrary<T>) => fc.oneof(fc.constant(valid), hostile);

  const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));
  const timestamp = (seconds: bigint, nanos = 0) => create(TimestampSchema, { seconds, nanos });
  const YEAR_1 = -62_135_596_800n;
  const YEAR_10000 = 253_402_300_800n;
  // Beyond years 1–9999 (which Postgres and the Timestamp contract hold), nanos outside 0–999,999,999.
  const extremeTimestamp = fc
    .tuple(
      fc.oneof(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.constantFrom(YEAR_1 - 1n, YEAR_1, YEAR_10000 - 1n, YEAR_10000, 10n ** 15n, -(2n ** 63n), 2n ** 63n - 1n),
      ),
      fc.oneof(fc.constantFrom(0, 999_999_999, -1, 1_000_000_000), fc.integer({ min: -2_147_483_648, max: 2_147_483_647 })),
    )
    .map(([seconds, nanos]) => timestamp(seconds, nanos));
  const extremeDuration = fc
    .tuple(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.integer({ min: -2_147_483_648, max: 2_147_483_647 }))
    .map(([seconds, nanos]) => create(DurationSchema, { seconds, nanos }));
  const int32 = fc.integer({ min: -2_147_483_648, max: 2_147_483_647 });

  it("SubscriptionService and OrderService fields", async () => {
    await fc.assert(
      fc.asyncProperty(orValid(merchantId, text), int32, orValid("", text), orValid(subscriptionId, text), async (merchant, pageSize, pageToken, id) => {
        await expectCallerError(h.query.subscriptions.listSubscriptions({ merchantId: merchant, pageSize, pageToken }));
        await expectCallerError(h.query.subscriptions.getSubscription({ merchantId: merchant, subscriptionId: id }));
        await expectCallerError(h.query.orders.listOrders({ merchantId: merchant, pageSize, pageToken, subscriptionId: id }));
      }),
      { numRuns: 100 },
    );
  });

  it("ApiKeyService and AuditService fields", async () => {
    await fc.assert(
      fc.asyncProperty(orValid(merchantId, text), text, fc.integer({ min: -5, max: 100_000 }), async (merchant, value, pageSize) => {
        await expectCallerError(h.auth.apiKeys.authenticateApiKey({ key: value, clientIp: value, userAgent: value, requestId: value }));
        await expectCallerError(h.auth.apiKeys.listApiKeys({ merchantId: merchant, pageSize, pageToken: value }));
        await expectCallerError(h.auth.apiKeys.revokeApiKey({ merchantId: merchant, apiKeyId: value }));
        await expectCallerError(h.auth.audit.listAuditEvents({ merchantId: merchant, apiKeyId: value, pageSize, pageToken: value }));
        await expectCallerError(h.auth.audit.listAuditEvents({ merchantId: merchant, apiKeyId: value }));
      }),
      { numRuns: 100 },
    );
  });

  it("CreateApiKey: any merchant, name and expires_at", async () => {
    const future = fc.integer({ min: 1, max: 3_650 }).map((days) => timestamp(nowSeconds() + BigInt(days) * 86_400n));
    await fc.assert(
      fc.asyncProperty(
        orValid(merchantId, text),
        orValid("fuzzed", text),
        fc.oneof(fc.constant(undefined), future, extremeTimestamp),
        async (merchant, name, expiresAt) => {
          await expectCallerError(h.auth.apiKeys.createApiKey({ merchantId: merchant, name, expiresAt }));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("RecordRead(s): a hostile read is refused alone; the valid read beside it is still recorded", async () => {
    const valid = { merchantId, apiKeyId, requestId: "req_fuzz", method: "GET", route: "/subscriptions", status: 200 };
    const read = fc.record({
      merchantId: orValid(merchantId, text),
      apiKeyId: orValid(apiKeyId, text),
      requestId: orValid("req_fuzz", text),
      method: orValid("GET", text),
      route: orValid("/subscriptions", text),
      query: text,
      resourceIds: fc.array(text, { maxLength: 3 }),
      resultCount: orValid(1, int32),
      status: orValid(200, int32),
      clientIp: text,
      userAgent: text,
      occurredAt: fc.option(orValid(timestamp(nowSeconds()), extremeTimestamp), { nil: undefined }),
      latency: fc.option(extremeDuration, { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(read, async (hostile) => {
        await expectCallerError(h.auth.audit.recordRead(hostile));
        // Group-committed: a row Postgres refused would fail the whole INSERT, the valid read's too.
        const batch = await h.auth.audit.recordReads({ reads: [hostile, valid] });
        expect(batch.results[1]!.outcome.case).toBe("auditEventId");
      }),
      { numRuns: 100 },
    );
  });

  it("WebhookEndpointService fields", async () => {
    const url = orValid(
      "http://127.0.0.1:9/hooks",
      fc.oneof(
        text,
        text.map((path) => `http://127.0.0.1:9/${path}`),
      ),
    );
    const mask = (path: string) => create(FieldMaskSchema, { paths: [path] });
    await fc.assert(
      fc.asyncProperty(
        orValid(merchantId, text),
        orValid(endpointId, text),
        url,
        text,
        int32,
        orValid("", text),
        async (merchant, id, target, description, pageSize, pageToken) => {
          await expectCallerError(webhook.endpoints.createEndpoint({ merchantId: merchant, url: target, description }));
          await expectCallerError(webhook.endpoints.listEndpoints({ merchantId: merchant, pageSize, pageToken }));
          await expectCallerError(webhook.endpoints.getEndpoint({ merchantId: merchant, endpointId: id }));
          await expectCallerError(webhook.endpoints.updateEndpoint({ merchantId: merchant, endpoint: { id, description }, updateMask: mask("description") }));
          await expectCallerError(webhook.endpoints.updateEndpoint({ merchantId: merchant, endpoint: { id, url: target }, updateMask: mask("url") }));
          await expectCallerError(webhook.endpoints.sendTestEvent({ merchantId: merchant, endpointId: id }));
          // Never the fixture's own id: deleting it would leave the other calls nothing to reach.
          await expectCallerError(webhook.endpoints.deleteEndpoint({ merchantId: merchant, endpointId: id === endpointId ? description : id }));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("WebhookDeliveryService fields, ReplayEvents' time range included", async () => {
    const recent = fc.integer({ min: -40 * 86_400, max: 86_400 }).map((offset) => timestamp(nowSeconds() + BigInt(offset)));
    const time = orValid(undefined, fc.oneof(recent, extremeTimestamp));
    await fc.assert(
      fc.asyncProperty(
        orValid(merchantId, text),
        orValid(endpointId, text),
        text,
        time,
        time,
        orValid("", text),
        async (merchant, id, other, startTime, endTime, pageToken) => {
          await expectCallerError(webhook.deliveries.listDeliveries({ merchantId: merchant, endpointId: id, pageToken }));
          await expectCallerError(webhook.deliveries.listAttempts({ merchantId: merchant, deliveryId: other, pageToken }));
          await expectCallerError(webhook.deliveries.resendEvent({ merchantId: merchant, endpointId: id, eventId: other }));
          await expectCallerError(webhook.deliveries.replayEvents({ merchantId: merchant, endpointId: id, startTime, endTime }));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("a NUL or an out-of-range timestamp in a field that reaches Postgres is INVALID_ARGUMENT naming that field", async () => {
    const nul = "mer\u0000x";
    const year10000 = timestamp(YEAR_10000);
    const badNanos = timestamp(nowSeconds() + 86_400n, -1);
    const read = { merchantId, apiKeyId, requestId: "req_nul", method: "GET", route: "/subscriptions", status: 200 };
    const cases: Array<[string, () => Promise<unknown>]> = [
      ["merchant_id", () => h.query.subscriptions.listSubscriptions({ merchantId: nul })],
      ["merchant_id", () => h.query.subscriptions.getSubscription({ merchantId: nul, subscriptionId })],
      ["merchant_id", () => h.query.orders.listOrders({ merchantId: nul })],
      ["merchant_id", () => h.auth.apiKeys.createApiKey({ merchantId: nul })],
      ["name", () => h.auth.apiKeys.createApiKey({ merchantId, name: nul })],
      ["expires_at", () => h.auth.apiKeys.createApiKey({ merchantId, expiresAt: year10000 })],
      ["expires_at", () => h.auth.apiKeys.createApiKey({ merchantId, expiresAt: badNanos })],
      ["merchant_id", () => h.auth.audit.listAuditEvents({ merchantId: nul })],
      ["api_key_id", () => h.auth.audit.listAuditEvents({ merchantId, apiKeyId: nul })],
      ["route", () => h.auth.audit.recordRead({ ...read, route: nul })],
      ["occurred_at", () => h.auth.audit.recordRead({ ...read, occurredAt: year10000 })],
      ["occurred_at", () => h.auth.audit.recordRead({ ...read, occurredAt: timestamp(YEAR_1 - 1n) })],
      ["latency", () => h.auth.audit.recordRead({ ...read, latency: create(DurationSchema, { seconds: 2n ** 62n }) })],
      ["merchant_id", () => webhook.endpoints.createEndpoint({ merchantId: nul, url: "http://127.0.0.1:9/hooks" })],
      ["description", () => webhook.endpoints.createEndpoint({ merchantId, url: "http://127.0.0.1:9/hooks", description: nul })],
      [
        "endpoint.description",
        () =>
          webhook.endpoints.updateEndpoint({
            merchantId,
            endpoint: { id: endpointId, description: nul },
            updateMask: create(FieldMaskSchema, { paths: ["description"] }),
          }),
      ],
      ["merchant_id", () => webhook.endpoints.listEndpoints({ merchantId: nul })],
      ["merchant_id", () => webhook.endpoints.getEndpoint({ merchantId: nul, endpointId })],
      ["merchant_id", () => webhook.endpoints.rotateSecret({ merchantId: nul, endpointId })],
      ["merchant_id", () => webhook.endpoints.sendTestEvent({ merchantId: nul, endpointId })],
      ["merchant_id", () => webhook.deliveries.listDeliveries({ merchantId: nul, endpointId })],
      ["merchant_id", () => webhook.deliveries.resendEvent({ merchantId: nul, endpointId, eventId: "evt_0" })],
      ["start_time", () => webhook.deliveries.replayEvents({ merchantId, endpointId, startTime: year10000 })],
      ["start_time", () => webhook.deliveries.replayEvents({ merchantId, endpointId, startTime: timestamp(-(2n ** 63n)), endTime: timestamp(nowSeconds()) })],
      [
        "end_time",
        () =>
          webhook.deliveries.replayEvents({
            merchantId,
            endpointId,
            startTime: timestamp(nowSeconds() - 60n),
            endTime: timestamp(nowSeconds(), 1_000_000_000),
          }),
      ],
    ];
    for (const [field, call] of cases) {
      const error = await rpcError(call());
      expect(Code[error.code], `${field}: ${error.rawMessage}`).toBe("InvalidArgument");
      expect(errorDetailOf(error)?.fieldViolations.map((violation) => violation.field)).toEqual([field]);
    }
    // A NUL in an id that names a row is still NOT_FOUND, exactly as for an unknown or foreign id.
    expect((await rpcError(h.query.subscriptions.getSubscription({ merchantId, subscriptionId: "sub_\u0000" }))).code).toBe(Code.NotFound);
    expect((await rpcError(webhook.endpoints.getEndpoint({ merchantId, endpointId: "we_\u0000" }))).code).toBe(Code.NotFound);
    expect((await rpcError(webhook.deliveries.listAttempts({ merchantId, deliveryId: "whd_\u0000" }))).code).toBe(Code.NotFound);
  });
});
