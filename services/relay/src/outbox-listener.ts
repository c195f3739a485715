import { createPgListener, type Logger } from "@subdata/runtime";

/** Sent by the webhook service when it hands back events the stream lost (subdata_republish_unstored_events). */
const OUTBOX_CHANNEL = "subdata_outbox";

export interface OutboxListener {
  /** Connects and keeps listening (reconnecting with backoff) until close(). */
  start(): void;
  close(): Promise<void>;
}

export interface OutboxListenerOptions {
  connectionString: string;
  logger: Logger;
  /** Called on every notification, and after each (re)connect or loss since notifications may have been missed. */
  onWake: () => void;
}

/**
 * LISTEN subdata_outbox on a dedicated connection. Captured changes do not notify (the commit watch
 * sees them); this hears the rows the webhook service hands back. The relay's poll covers the time it
 * is down, so losing it costs latency, never events.
 */
export function createOutboxListener(options: OutboxListenerOptions): OutboxListener {
  return createPgListener({
    connectionString: options.connectionString,
    channel: OUTBOX_CHANNEL,
    applicationName: "subdata-relay-listen",
    logger: options.logger,
    onNotification: () => options.onWake(),
    onGap: () => options.onWake(),
  });
}
