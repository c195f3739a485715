import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@subdata/proto/grpc/health/v1/health_pb";
import { afterEach, describe, expect, it } from "vitest";
import { createHealthService, createHealthState } from "./health.ts";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A real HTTP/2 server on port 0: a client's cancel reaches the server as a reset stream, as in production. */
async function healthClient(maxWatches: number) {
  const state = createHealthState({ maxWatches });
  const server = http2.createServer(connectNodeAdapter({ routes: (router) => router.service(Health, createHealthService(state, [])) }));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => sessions.add(session));
  closers.push(async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    for (const session of sessions) session.destroy();
    await closed;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  return { state, client: createClient(Health, transport) };
}

/** Waits (bounded) until the server side has let go of what a cancelled stream held. */
async function until(check: () => boolean): Promise<void> {
  for (let turn = 0; turn < 200 && !check(); turn++) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("grpc.health.v1 Watch", () => {
  it("caps the streams open at once: one beyond maxWatches is RESOURCE_EXHAUSTED, and a slot freed by a cancel is taken again", async () => {
    const { state, client } = await healthClient(2);
    const cancels = [new AbortController(), new AbortController()];
    const streams = cancels.map((cancel) => client.watch({ service: "" }, { signal: cancel.signal })[Symbol.asyncIterator]());
    for (const stream of streams) expect((await stream.next()).value).toMatchObject({ status: ServingStatus.SERVING });
    expect(state.watches).toBe(2);

    const refused = client.watch({ service: "" })[Symbol.asyncIterator]();
    await expect(refused.next()).rejects.toSatisfy((error) => ConnectError.from(error).code === Code.ResourceExhausted);

    cancels[0]!.abort();
    await expect(streams[0]!.next()).rejects.toSatisfy((error) => ConnectError.from(error).code === Code.Canceled);
    await until(() => state.watches === 1);
    expect(state.watches).toBe(1);
    const again = client.watch({ service: "" })[Symbol.asyncIterator]();
    expect((await again.next()).value).toMatchObject({ status: ServingStatus.SERVING });
    // The open ones still hear the next change.
    state.setServing(false);
    expect((await again.next()).value).toMatchObject({ status: ServingStatus.NOT_SERVING });
    expect((await streams[1]!.next()).value).toMatchObject({ status: ServingStatus.NOT_SERVING });
    cancels[1]!.abort();
  });

  it("leaves no waiter behind for a cancelled stream, however many come and go", async () => {
    const { state, client } = await healthClient(4);
    for (let round = 0; round < 50; round++) {
      const cancel = new AbortController();
      const stream = client.watch({ service: "" }, { signal: cancel.signal })[Symbol.asyncIterator]();
      await stream.next();
      cancel.abort();
      await stream.next().catch(() => {});
    }
    await until(() => state.watches === 0 && state.waiting === 0);
    expect(state.watches).toBe(0);
    expect(state.waiting).toBe(0);
  });
});
