import net from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { createPool } from "@subdata/runtime";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTestGateway, KEY } from "../../gateway/src/test-support/test-gateway.ts";
import { type GatewayHarness, startGatewayHarness } from "../gateway/gateway-harness.ts";

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
    const line = await rawStatusLine(port, `GET /api/v1/subscriptions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Big: ${"a".repeat(64 * 1024)}\r\n\r\n`);
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
    const pool = createPool({ connectionString: inject("roleDatabaseUrls").query, statementTimeoutMs: 200, readOnly: true, applicationName: "hostile-timeout" });
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
  let merchantId = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    merchantId = await h.fixtures.merchant();
    await h.fixtures.subscription({ merchantId });
  });

  afterAll(async () => {
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

  const text = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: "binary", maxLength: 30 }), fc.constantFrom("", "mer_", "\u0000", "a".repeat(10_000)));

  it("SubscriptionService and OrderService fields", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(text, fc.constant(merchantId)),
        fc.integer({ min: -2_147_483_648, max: 2_147_483_647 }),
        text,
        text,
        async (merchant, pageSize, pageToken, id) => {
          await expectCallerError(h.query.subscriptions.listSubscriptions({ merchantId: merchant, pageSize, pageToken }));
          await expectCallerError(h.query.subscriptions.getSubscription({ merchantId: merchant, subscriptionId: id }));
          await expectCallerError(h.query.orders.listOrders({ merchantId: merchant, pageSize, pageToken, subscriptionId: id }));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("ApiKeyService and AuditService fields", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(text, fc.constant(merchantId)), text, fc.integer({ min: -5, max: 100_000 }), async (merchant, value, pageSize) => {
        await expectCallerError(h.auth.apiKeys.authenticateApiKey({ key: value }));
        await expectCallerError(h.auth.apiKeys.listApiKeys({ merchantId: merchant, pageSize, pageToken: value }));
        await expectCallerError(h.auth.apiKeys.revokeApiKey({ merchantId: merchant, apiKeyId: value }));
        await expectCallerError(h.auth.audit.listAuditEvents({ merchantId: merchant, apiKeyId: value, pageSize, pageToken: value }));
      }),
      { numRuns: 100 },
    );
  });
});
