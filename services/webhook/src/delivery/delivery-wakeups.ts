import type { Logger, Pool, PoolClient } from "@subdata/runtime";

/**
 * Wake-ups for the delivery workers. A PENDING webhook_deliveries row whose next_attempt_at has passed
 * is delivered whoever inserted it (ingest, ResendEvent, ReplayEvents, SendTestEvent); inserting one and
 * sending NOTIFY on DELIVERY_CHANNEL wakes the workers of every replica at once, otherwise they find it
 * at their next poll. The payload names the endpoints of the new rows, comma-separated, or is empty for
 * rows of any endpoint.
 */
export const DELIVERY_CHANNEL = "subdata_webhook_delivery";

export interface DeliveryWakeups {
  close(): Promise<void>;
}

/** The endpoints a DELIVERY_CHANNEL payload names; undefined (any endpoint) when it names none. */
export function endpointsOfWakeup(payload: string | undefined): string[] | undefined {
  return payload ? payload.split(",") : undefined;
}

/**
 * LISTENs on DELIVERY_CHANNEL with one pooled connection and calls `onWake` per notification, with the
 * endpoints it names, so rows inserted by any replica or by the RPC handlers are picked up at once.
 * Reconnects after errors; polling covers the gaps.
 */
export function listenForDeliveries(pool: Pool, onWake: (endpointIds?: readonly string[]) => void, logger: Logger, retryMs = 2_000): DeliveryWakeups {
  let closed = false;
  let client: PoolClient | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

  const connect = async () => {
    try {
      const next = await pool.connect();
      if (closed) {
        next.release();
        return;
      }
      client = next;
      next.on("notification", (message) => {
        if (message.channel === DELIVERY_CHANNEL) onWake(endpointsOfWakeup(message.payload));
      });
      next.on("error", (error) => {
        logger.warn({ err: error }, "delivery LISTEN connection failed; reconnecting");
        if (client === next) client = undefined;
        next.release(error);
        scheduleRetry();
      });
      await next.query(`LISTEN ${DELIVERY_CHANNEL}`);
      onWake();
    } catch (error) {
      logger.warn({ err: error }, "could not LISTEN for deliveries; retrying");
      if (client) {
        client.release(error as Error);
        client = undefined;
      }
      scheduleRetry();
    }
  };
  const scheduleRetry = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, retryMs);
  };

  void connect();
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      if (!current) return;
      try {
        await current.query(`UNLISTEN ${DELIVERY_CHANNEL}`);
        current.release();
      } catch (error) {
        current.release(error as Error);
      }
    },
  };
}
