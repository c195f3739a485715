import pg from "pg";
import type { Logger } from "./logger.ts";
import { connectionConfig } from "./pg.ts";

export interface PgListener {
  /** Connects and keeps listening, reconnecting with backoff, until close(). */
  start(): void;
  /** Whether the LISTEN is in place right now (notifications may be missed while it is not). */
  readonly listening: boolean;
  close(): Promise<void>;
}

export interface PgListenerOptions {
  connectionString: string;
  /** A fixed identifier (it is not quoted). */
  channel: string;
  applicationName: string;
  logger: Logger;
  /** Each notification's payload. */
  onNotification: (payload: string) => void;
  /** After each (re)connect and after each loss: notifications may have been missed meanwhile. */
  onGap: () => void;
}

const INITIAL_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;

/**
 * LISTEN on a dedicated connection (a pooled one would lose the LISTEN on release), with the pools'
 * keepalive and timeouts (pg.ts) so a peer that vanished without a reset is noticed.
 */
export function createPgListener(options: PgListenerOptions): PgListener {
  const stop = new AbortController();
  let client: pg.Client | undefined;
  let running: Promise<void> | undefined;
  let listening = false;
  let backoffMs = INITIAL_BACKOFF_MS;

  async function listenUntilLost(): Promise<void> {
    const current = new pg.Client(connectionConfig({ connectionString: options.connectionString, applicationName: options.applicationName }));
    client = current;
    const lost = new Promise<void>((resolve) => {
      current.on("error", (error) => {
        options.logger.warn({ err: error, channel: options.channel }, "LISTEN connection failed");
        resolve();
      });
      current.on("end", () => resolve());
    });
    current.on("notification", (message) => options.onNotification(message.payload ?? ""));
    await current.connect();
    await current.query(`LISTEN ${options.channel}`);
    listening = true;
    backoffMs = INITIAL_BACKOFF_MS;
    options.onGap();
    await Promise.race([lost, new Promise((resolve) => stop.signal.addEventListener("abort", resolve, { once: true }))]);
    listening = false;
    options.onGap();
    await current.end().catch(() => {});
  }

  async function run(): Promise<void> {
    while (!stop.signal.aborted) {
      try {
        await listenUntilLost();
      } catch (error) {
        listening = false;
        options.logger.warn({ err: error, channel: options.channel }, "could not LISTEN; retrying");
        await client?.end().catch(() => {});
      }
      if (stop.signal.aborted) break;
      const delay = backoffMs * (0.8 + Math.random() * 0.4);
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        stop.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
    }
  }

  return {
    start() {
      running ??= run();
    },
    get listening() {
      return listening;
    },
    async close() {
      stop.abort();
      await client?.end().catch(() => {});
      await running;
    },
  };
}
