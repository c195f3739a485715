import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { afterEach, describe, expect, it } from "vitest";
import { createUnaryFastPath } from "./unary-handler.ts";
import { createUnaryTransport } from "./unary-transport.ts";
import { rpcError } from "./test-support/rpc-error.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * The wiring of createConnectServer, with a record of which requests the fast path took: a server
 * whose RecordRead answers with the merchant id it was given (or runs `behaviour`).
 */
async function startServer(behaviour?: (merchantId: string, context: HandlerContext) => Promise<{ auditEventId: string }>) {
  const taken: boolean[] = [];
  const tagHeader = "x-interceptor-saw";
  const fastPath = createUnaryFastPath({
    interceptors: [
      (next) => async (request) => {
        const response = await next(request);
        response.header.set(tagHeader, request.header.get("x-tag") ?? "none");
        return response;
      },
    ],
    readMaxBytes: 1024,
  });
  const implementation = {
    recordRead: (request: { merchantId: string }, context: HandlerContext) =>
      behaviour ? behaviour(request.merchantId, context) : { auditEventId: `aud_${request.merchantId}` },
    recordReads: () => ({ results: [] }),
    listAuditEvents: () => ({ auditEvents: [], nextPageToken: "" }),
  };
  const adapter = connectNodeAdapter({ routes: fastPath.recordRoutes((router) => router.service(AuditService, implementation)), readMaxBytes: 1024 });
  const server = http2.createServer((request, response) => {
    const handled = fastPath.handle(request, response);
    taken.push(handled);
    if (!handled) adapter(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => sessions.add(session));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  );
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, taken, tagHeader };
}

function lean(baseUrl: string) {
  const transport = createUnaryTransport({ baseUrl });
  cleanups.push(() => transport.close());
  return createClient(AuditService, transport.transport);
}

describe("the unary fast path", () => {
  it("serves binary Connect unary calls through the interceptors, with their headers", async () => {
    const server = await startServer();
    let header: Headers | undefined;
    const answer = await lean(server.baseUrl).recordRead({ merchantId: "m1" }, { headers: { "x-tag": "t1" }, onHeader: (h) => (header = h) });
    expect(answer.auditEventId).toBe("aud_m1");
    expect(header?.get(server.tagHeader)).toBe("t1");
    expect(server.taken).toEqual([true]);
  });

  it("leaves JSON and gRPC calls to connect-node, which answers them the same", async () => {
    const server = await startServer();
    const json = createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2", useBinaryFormat: false });
    const grpc = createGrpcTransport({ baseUrl: server.baseUrl });
    expect((await createClient(AuditService, json).recordRead({ merchantId: "j" })).auditEventId).toBe("aud_j");
    expect((await createClient(AuditService, grpc).recordRead({ merchantId: "g" })).auditEventId).toBe("aud_g");
    expect(server.taken).toEqual([false, false]);
  });

  it("answers an implementation's error as Connect's JSON error, and a body over the limit RESOURCE_EXHAUSTED", async () => {
    const server = await startServer(async (merchantId) => {
      throw new ConnectError(`no such merchant ${merchantId}`, Code.NotFound);
    });
    const client = lean(server.baseUrl);
    const notFound = await rpcError(client.recordRead({ merchantId: "m404" }));
    expect(notFound.code).toBe(Code.NotFound);
    expect(notFound.rawMessage).toBe("no such merchant m404");
    const tooBig = await rpcError(client.recordRead({ merchantId: "x".repeat(2048) }));
    expect(tooBig.code).toBe(Code.ResourceExhausted);
    expect(server.taken).toEqual([true, true]);
  });

  it("passes the caller's deadline to the implementation and aborts its signal when the caller goes away", async () => {
    let context: HandlerContext | undefined;
    const server = await startServer((_merchantId, handlerContext) => {
      context = handlerContext;
      return new Promise(() => {});
    });
    const error = await rpcError(lean(server.baseUrl).recordRead({ merchantId: "slow" }, { timeoutMs: 300 }));
    expect(error.code).toBe(Code.DeadlineExceeded);
    expect(context?.timeoutMs()).toBeLessThanOrEqual(300);
    await expect.poll(() => context?.signal.aborted).toBe(true);
  });
});
