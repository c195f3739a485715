import http2 from "node:http2";
import { Code, createClient, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { afterEach, describe, expect, it } from "vitest";
import { createConnectServer } from "./connect-server.ts";
import { errorDetailOf, ErrorReason, errorWithReason, invalidArgument } from "./errors.ts";
import { createHealthState } from "./health.ts";
import { createLogger } from "./logger.ts";
import { createServiceTransport } from "./transport.ts";
import { createCallerTokens } from "./test-support/caller-tokens.ts";
import { rpcError } from "./test-support/rpc-error.ts";

const callers = createCallerTokens();
const TOKEN = callers.tokens.gateway;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type RecordRead = (
  request: { merchantId: string },
  context: { signal: AbortSignal; requestHeader: Headers; timeoutMs(): number | undefined },
) => Promise<{ auditEventId: string }>;

/** A real connect-node server (the services' own wiring) whose RecordRead the test scripts. */
async function startServer(recordRead: RecordRead, port = 0) {
  const server = createConnectServer({
    routes: (router: ConnectRouter) =>
      router.service(AuditService, {
        recordRead: (request, context) => recordRead(request, context),
        recordReads: async () => ({ results: [] }),
        listAuditEvents: async () => ({ auditEvents: [], nextPageToken: "" }),
      }),
    serviceNames: [AuditService.typeName],
    callers: callers.credentials,
    logger: createLogger({ name: "test", level: "silent" }),
    health: createHealthState(),
  });
  const sessions: http2.ServerHttp2Session[] = [];
  server.server.on("session", (session) => sessions.push(session));
  const address = await server.listen("127.0.0.1", port);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const session of sessions) session.destroy();
    await server.close();
  };
  cleanups.push(close);
  return { baseUrl: `http://127.0.0.1:${address.port}`, port: address.port, sessions, close };
}

function client(baseUrl: string, interceptors: Interceptor[] = []) {
  const transport = createServiceTransport({ baseUrl, serviceToken: TOKEN, interceptors });
  cleanups.push(() => transport.close());
  return createClient(AuditService, transport.transport);
}

describe("the unary transport against a connect-node server", () => {
  it("round-trips a call, with the interceptors' headers and the service credential", async () => {
    const seen: Array<{ merchantId: string; requestId: string | null }> = [];
    const server = await startServer(async (request, context) => {
      seen.push({ merchantId: request.merchantId, requestId: context.requestHeader.get("request-id") });
      return { auditEventId: `aud_${request.merchantId}` };
    });
    const tagRequest: Interceptor = (next) => (request) => {
      request.header.set("request-id", "req_1");
      return next(request);
    };
    const audit = client(server.baseUrl, [tagRequest]);
    const answers = await Promise.all(["m1", "m2", "m3"].map((merchantId) => audit.recordRead({ merchantId })));
    expect(answers.map((answer) => answer.auditEventId)).toEqual(["aud_m1", "aud_m2", "aud_m3"]);
    expect(seen).toEqual(["m1", "m2", "m3"].map((merchantId) => ({ merchantId, requestId: "req_1" })));
    // One session carries every call.
    expect(server.sessions).toHaveLength(1);
  });

  it("turns the server's errors back into the same ConnectError, details included", async () => {
    const server = await startServer(async (request) => {
      if (request.merchantId === "bad") throw invalidArgument("merchant_id", "is malformed");
      throw errorWithReason("key revoked", Code.Unauthenticated, ErrorReason.API_KEY_REVOKED);
    });
    const audit = client(server.baseUrl);
    const invalid = await rpcError(audit.recordRead({ merchantId: "bad" }));
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(invalid.rawMessage).toContain("merchant_id");
    const revoked = await rpcError(audit.recordRead({ merchantId: "x" }));
    expect(revoked.code).toBe(Code.Unauthenticated);
    expect(errorDetailOf(revoked)?.reason).toBe(ErrorReason.API_KEY_REVOKED);
  });

  it("is refused without the service credential", async () => {
    const server = await startServer(async () => ({ auditEventId: "aud_1" }));
    const transport = createServiceTransport({ baseUrl: server.baseUrl, serviceToken: "wrong".repeat(8) });
    cleanups.push(() => transport.close());
    const error = await rpcError(createClient(AuditService, transport.transport).recordRead({ merchantId: "m" }));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  it("gives up at the deadline, and tells the server the deadline", async () => {
    let serverTimeout: number | undefined;
    let serverSignal: AbortSignal | undefined;
    const server = await startServer((_request, context) => {
      serverTimeout = context.timeoutMs();
      serverSignal = context.signal;
      return new Promise(() => {}); // never answers
    });
    const error = await rpcError(client(server.baseUrl).recordRead({ merchantId: "m" }, { timeoutMs: 200 }));
    expect(error.code).toBe(Code.DeadlineExceeded);
    expect(serverTimeout).toBeGreaterThan(0);
    expect(serverTimeout).toBeLessThanOrEqual(200);
    await expect.poll(() => serverSignal?.aborted).toBe(true);
  });

  it("answers CANCELED when the caller aborts", async () => {
    const server = await startServer(() => new Promise(() => {}));
    const controller = new AbortController();
    const call = client(server.baseUrl).recordRead({ merchantId: "m" }, { signal: controller.signal });
    setImmediate(() => controller.abort());
    expect((await rpcError(call)).code).toBe(Code.Canceled);
  });

  it("answers UNAVAILABLE when nothing listens, and reconnects once the server is back", async () => {
    const first = await startServer(async () => ({ auditEventId: "aud_first" }));
    const audit = client(first.baseUrl);
    expect((await audit.recordRead({ merchantId: "m" })).auditEventId).toBe("aud_first");
    await first.close();
    expect((await rpcError(audit.recordRead({ merchantId: "m" }))).code).toBe(Code.Unavailable);
    await startServer(async () => ({ auditEventId: "aud_second" }), first.port);
    expect((await audit.recordRead({ merchantId: "m" })).auditEventId).toBe("aud_second");
  });

  it("leaves a session that answered nothing until the deadline, so the next call opens a new one", async () => {
    let calls = 0;
    const server = await startServer(async () => {
      calls++;
      if (calls === 1) return new Promise(() => {});
      return { auditEventId: "aud_ok" };
    });
    const audit = client(server.baseUrl);
    expect((await rpcError(audit.recordRead({ merchantId: "m" }, { timeoutMs: 100 }))).code).toBe(Code.DeadlineExceeded);
    expect((await audit.recordRead({ merchantId: "m" }, { timeoutMs: 2_000 })).auditEventId).toBe("aud_ok");
    expect(server.sessions).toHaveLength(2);
  });

  it("answers UNAVAILABLE, not a partial message, when the connection drops in the middle of the body", async () => {
    const server = http2.createServer();
    server.on("stream", (stream) => {
      stream.respond({ ":status": 200, "content-type": "application/proto" });
      // A complete field 1 ("aud"): decoded alone it would look like a real answer.
      stream.write(Buffer.from([0x0a, 0x03, 0x61, 0x75, 0x64]));
      // Node's client still emits "end" for the cut stream; only its RST code tells.
      setTimeout(() => stream.session?.destroy(), 20);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const error = await rpcError(client(`http://127.0.0.1:${port}`).recordRead({ merchantId: "m" }));
    expect(error.code).toBe(Code.Unavailable);
  });
});
