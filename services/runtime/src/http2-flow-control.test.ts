import http2 from "node:http2";
import { createClient } from "@connectrpc/connect";
import { Health } from "@subdata/proto/grpc/health/v1/health_pb";
import { afterEach, describe, expect, it } from "vitest";
import { createConnectServer } from "./connect-server.ts";
import { createHealthState } from "./health.ts";
import { CONNECTION_WINDOW_SIZE } from "./http2-flow-control.ts";
import { createLogger } from "./logger.ts";
import { createServiceTransport } from "./transport.ts";

const HTTP2_DEFAULT_WINDOW = 65_535;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer() {
  const server = createConnectServer({
    routes: () => {},
    serviceNames: [],
    callers: {},
    logger: createLogger({ name: "test", level: "silent" }),
    health: createHealthState(),
  });
  const sessions: http2.ServerHttp2Session[] = [];
  server.server.on("session", (session) => sessions.push(session));
  const address = await server.listen("127.0.0.1", 0);
  cleanups.push(() => server.close());
  return { baseUrl: `http://127.0.0.1:${address.port}`, sessions };
}

/** Polls (bounded) until the WINDOW_UPDATE has been processed; returns the last value read. */
async function settle(read: () => number): Promise<number> {
  for (let attempt = 0; attempt < 100 && read() <= HTTP2_DEFAULT_WINDOW; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
  return read();
}

describe("HTTP/2 connection windows of internal hops", () => {
  // Raising only the per-stream window would leave 64 concurrent page responses sharing 64 KB.
  it("a service transport opens its sessions with a wide connection-level receive window", async () => {
    const { baseUrl, sessions } = await startServer();
    const transport = createServiceTransport({ baseUrl, serviceToken: "health-needs-no-credential" });
    cleanups.push(() => transport.close());
    await createClient(Health, transport.transport).check({ service: "" });

    expect(sessions).toHaveLength(1);
    // What the server may send on the connection = the client's connection window.
    const window = await settle(() => sessions[0]!.state.remoteWindowSize ?? 0);
    expect(window).toBeGreaterThan(CONNECTION_WINDOW_SIZE / 2);
  });

  it("a connect server widens the connection-level receive window of every session", async () => {
    const { baseUrl } = await startServer();
    const client = http2.connect(baseUrl);
    cleanups.push(() => void client.close());
    await new Promise<void>((resolve, reject) => client.once("connect", () => resolve()).once("error", reject));
    // A round trip, so the server's WINDOW_UPDATE has arrived.
    await new Promise<void>((resolve, reject) => client.ping((error) => (error ? reject(error) : resolve())));

    const window = await settle(() => client.state.remoteWindowSize ?? 0);
    expect(window).toBeGreaterThan(CONNECTION_WINDOW_SIZE / 2);
  });
});
