import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpAnswers, waitFor } from "./readiness.ts";

const servers: Server[] = [];

async function serve(handler: Parameters<typeof createServer>[1], port = 0): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe("httpAnswers", () => {
  it("is true below 500 and false for a 5xx", async () => {
    const url = await serve((request, response) => {
      response.statusCode = request.url === "/down" ? 503 : 200;
      response.end('{"status":"ok"}');
    });
    expect(await httpAnswers(`${url}/healthz`)).toBe(true);
    expect(await httpAnswers(`${url}/down`)).toBe(false);
  });

  it("reaches a server on a port fetch refuses (10080)", async () => {
    const url = await serve((_request, response) => response.end(), 10_080);
    expect(url).toBe("http://127.0.0.1:10080");
    expect(await httpAnswers(`${url}/healthz`)).toBe(true);
  });

  it("is false when nothing listens", async () => {
    const url = await serve(() => {});
    await new Promise((resolve) => servers.pop()?.close(resolve));
    expect(await httpAnswers(`${url}/healthz`)).toBe(false);
  });

  it("settles as false when the server accepts but never answers", async () => {
    const url = await serve(() => {});
    expect(await httpAnswers(`${url}/healthz`)).toBe(false);
  });
});

describe("waitFor", () => {
  it("is false once the time runs out or the caller gives up", async () => {
    expect(await waitFor(async () => false, { timeoutMs: 300, gaveUp: () => false })).toBe(false);
    expect(await waitFor(async () => true, { timeoutMs: 30_000, gaveUp: () => true })).toBe(false);
  });
});
