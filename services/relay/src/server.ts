import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "@subdata/runtime";

export interface RelayServer {
  listen(host: string, port: number): Promise<AddressInfo>;
  close(): Promise<void>;
}

/**
 * Plain HTTP probes for the relay, which serves no RPC: GET /healthz answers 200 while the process
 * runs; GET /readyz answers 200 only while `ready()` (the last round reached Postgres and NATS);
 * GET /metrics serves `metrics` (Prometheus text) when given.
 */
export function createRelayServer(ready: () => boolean, metrics?: Registry): RelayServer {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/metrics" && metrics) {
      metrics.metrics().then(
        (body) => response.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" }).end(body),
        () => response.writeHead(500).end(),
      );
      return;
    }
    const ok = path === "/healthz" || (path === "/readyz" && ready());
    const known = path === "/healthz" || path === "/readyz";
    response.writeHead(known ? (ok ? 200 : 503) : 404, { "content-type": "text/plain", "cache-control": "no-store" });
    response.end(known ? (ok ? "ok\n" : "not ready\n") : "not found\n");
  });
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => resolve(server.address() as AddressInfo));
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        // A prober's idle keep-alive connection must not hold shutdown up.
        server.closeIdleConnections();
      });
    },
  };
}
