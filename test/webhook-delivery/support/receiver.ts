import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** A webhook receiver on 127.0.0.1, port 0, that records every request and answers as told. */

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The exact body bytes as text. */
  body: string;
}

/** The subscription and version a delivered webhook's body carries (what ordering is judged by). */
export function versionOf(request: ReceivedRequest): { subscriptionId: string; version: number } {
  const body = JSON.parse(request.body);
  return { subscriptionId: body.data.object.id, version: body.data.object.version };
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export type Responder = (request: ReceivedRequest, index: number) => Reply | Promise<Reply>;

export interface Receiver {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  requests: ReceivedRequest[];
  /** Answer subsequent requests with this. */
  respondWith(responder: Responder): void;
  close(): Promise<void>;
}

export async function startReceiver(responder: Responder = () => ({ status: 200, body: "ok" })): Promise<Receiver> {
  let respond = responder;
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request: ReceivedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      const index = requests.push(request) - 1;
      void Promise.resolve(respond(request, index)).then(
        (reply) => {
          if (res.destroyed) return;
          res.writeHead(reply.status, reply.headers ?? {});
          res.end(reply.body ?? "");
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    respondWith(next) {
      respond = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The webhook-* headers of a request, as the standardwebhooks library wants them. */
export function webhookHeaders(request: ReceivedRequest): Record<string, string> {
  return {
    "webhook-id": String(request.headers["webhook-id"]),
    "webhook-timestamp": String(request.headers["webhook-timestamp"]),
    "webhook-signature": String(request.headers["webhook-signature"]),
  };
}
