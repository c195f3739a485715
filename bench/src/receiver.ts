import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import { performance } from "node:perf_hooks";

/**
 * A fast local webhook receiver: answers 204 at once, records when each (subscription, version)
 * arrived and checks the Standard Webhooks signature with node:crypto (one HMAC, microseconds) once
 * the endpoint's secret is known. Runs inside the bench process, so arrival times and commit times
 * come from the same clock.
 */
export interface Receiver {
  url: string;
  /** The endpoint's "whsec_…" secret; signatures are checked from then on. */
  setSecret(secret: string): void;
  readonly received: number;
  readonly badSignatures: number;
  /** performance.now() of the first and last arrival since reset(). */
  readonly firstAt: number | undefined;
  readonly lastAt: number | undefined;
  reset(): void;
  /** Resolves with the arrival time of (subscription, version), or undefined after timeoutMs. */
  arrival(subscriptionId: string, version: number, timeoutMs: number): Promise<number | undefined>;
  /** Resolves true once `count` deliveries arrived since reset(), false after timeoutMs. */
  waitForCount(count: number, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

interface EventBody {
  data?: { object?: { id?: string; version?: number } };
}

export async function startReceiver(): Promise<Receiver> {
  // A KeyObject: on Node 24 an HMAC keyed with a Buffer costs about six times as much.
  let key: KeyObject | undefined;
  let received = 0;
  let badSignatures = 0;
  let firstAt: number | undefined;
  let lastAt: number | undefined;
  const arrivals = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  let countWaiter: { count: number; resolve: () => void } | undefined;

  const verify = (headers: Record<string, string | string[] | undefined>, body: string): boolean => {
    if (!key) return true;
    const id = String(headers["webhook-id"] ?? "");
    const timestamp = String(headers["webhook-timestamp"] ?? "");
    const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
    return String(headers["webhook-signature"] ?? "")
      .split(" ")
      .some((entry) => {
        const presented = Buffer.from(entry.replace(/^v1,/, ""), "base64");
        return presented.length === expected.length && timingSafeEqual(presented, expected);
      });
  };

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const at = performance.now();
      response.writeHead(204).end();
      const body = Buffer.concat(chunks).toString("utf8");
      if (!verify(request.headers, body)) badSignatures++;
      received++;
      firstAt ??= at;
      lastAt = at;
      try {
        const object = (JSON.parse(body) as EventBody).data?.object;
        if (object?.id !== undefined && object.version !== undefined) {
          const name = `${object.id}#${object.version}`;
          arrivals.set(name, at);
          waiters.get(name)?.(at);
          waiters.delete(name);
        }
      } catch {
        // Not an event body: counted, not correlated.
      }
      if (countWaiter && received >= countWaiter.count) countWaiter.resolve();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    setSecret(secret) {
      key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ""), "base64"));
    },
    get received() {
      return received;
    },
    get badSignatures() {
      return badSignatures;
    },
    get firstAt() {
      return firstAt;
    },
    get lastAt() {
      return lastAt;
    },
    reset() {
      received = 0;
      badSignatures = 0;
      firstAt = undefined;
      lastAt = undefined;
      arrivals.clear();
    },
    arrival(subscriptionId, version, timeoutMs) {
      const name = `${subscriptionId}#${version}`;
      const known = arrivals.get(name);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiters.delete(name);
          resolve(undefined);
        }, timeoutMs);
        waiters.set(name, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
      });
    },
    waitForCount(count, timeoutMs) {
      if (received >= count) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          countWaiter = undefined;
          resolve(false);
        }, timeoutMs);
        countWaiter = {
          count,
          resolve: () => {
            clearTimeout(timer);
            countWaiter = undefined;
            resolve(true);
          },
        };
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
