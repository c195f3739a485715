import { connectionConfig, createBackoff, type Logger, sleep } from "@subdata/runtime";
import pg from "pg";

const OUTBOX_CHANNEL = "subdata_outbox";

export interface OutboxListener {
  /** Connects and keeps listening (reconnecting with backoff) until close(). */
  start(): void;
  close(): Promise<void>;
}

export interface OutboxListenerOptions {
  connectionString: string;
  logger: Logger;
  /** Called on every notification, and after each (re)connect since notifications may have been missed. */
  onWake: () => void;
}

/**
 * LISTEN on a dedicated connection (a pooled one would lose the LISTEN on release). The poll in the
 * relay covers the time this is down, so losing it costs latency, never events.
 */
export function createOutboxListener(options: OutboxListenerOptions): OutboxListener {
  const stop = new AbortController();
  const backoff = createBackoff({ initialMs: 250, maxMs: 30_000 });
  let client: pg.Client | undefined;
  let running: Promise<void> | undefined;

  async function listenUntilLost(): Promise<void> {
    // The pools' keepalive and timeouts: a LISTEN on a dead peer would otherwise wait silently for hours.
    const current = new pg.Client(connectionConfig({ connectionString: options.connectionString, applicationName: "subdata-relay-listen" }));
    client = current;
    const lost = new Promise<void>((resolve) => {
      current.on("error", (error) => {
        options.logger.warn({ err: error }, "outbox listener connection failed");
        resolve();
      });
      current.on("end", () => resolve());
    });
    current.on("notification", () => options.onWake());
    await current.connect();
    await current.query(`LISTEN ${OUTBOX_CHANNEL}`);
    backoff.reset();
    options.logger.debug("listening for outbox notifications");
    options.onWake();
    await Promise.race([lost, new Promise((resolve) => stop.signal.addEventListener("abort", resolve, { once: true }))]);
    await current.end().catch(() => {});
  }

  async function run(): Promise<void> {
    while (!stop.signal.aborted) {
      try {
        await listenUntilLost();
      } catch (error) {
        options.logger.warn({ err: error }, "outbox listener could not connect");
        await client?.end().catch(() => {});
      }
      if (!stop.signal.aborted) await sleep(backoff.next(), stop.signal);
    }
  }

  return {
    start() {
      running ??= run();
    },
    async close() {
      stop.abort();
      await client?.end().catch(() => {});
      await running;
    },
  };
}
