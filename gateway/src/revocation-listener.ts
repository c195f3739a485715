import { fromBinary } from "@bufbuild/protobuf";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ApiKeyRevokedEventSchema } from "@subdata/proto/subdata/events/v1/api_key_event_pb";
import { apiKeyRevokedSubject } from "@subdata/events";
import type { Logger, NatsCredentials } from "@subdata/runtime";
import type { ApiKeyCache } from "./api-key-cache.ts";

/**
 * The gateway's only NATS module. Subscribes (core NATS) to key revocations and evicts them from the
 * verified-key cache, which makes a revocation effective here within a round trip. The cache is trusted
 * only while the subscription is known to be live (subscribed and flushed); on any disconnect it is
 * distrusted and emptied, so a revocation published while we were away can never be served from it.
 */

export interface RevocationListener {
  /** Connects in the background, retrying until close(); never throws. */
  start(): void;
  close(): Promise<void>;
}

export interface RevocationListenerDeps {
  natsUrl: string;
  /** The gateway's NATS user (NATS_USER, NATS_PASSWORD), when the server requires one: it may subscribe to revocations only. */
  credentials?: NatsCredentials | undefined;
  cache: ApiKeyCache;
  logger: Logger;
  /** Delay between first-connection attempts. */
  retryDelayMs?: number;
}

export function createRevocationListener(deps: RevocationListenerDeps): RevocationListener {
  const { cache, logger } = deps;
  let closed = false;
  let connection: NatsConnection | undefined;
  let running: Promise<void> | undefined;
  let wakeRetry: (() => void) | undefined;
  // Bumped on every connection change, so a flush that finishes after a disconnect trusts nothing.
  let generation = 0;

  async function trustAfterFlush(nc: NatsConnection): Promise<void> {
    const mine = ++generation;
    try {
      await nc.flush();
    } catch {
      return;
    }
    if (mine === generation && !closed && !nc.isClosed()) {
      cache.setTrusted(true);
      logger.info("revocation subscription live; verified-key cache enabled");
    }
  }

  function onRevoked(data: Uint8Array): void {
    try {
      const event = fromBinary(ApiKeyRevokedEventSchema, data);
      cache.evict(event.apiKeyId);
      logger.info({ apiKeyId: event.apiKeyId }, "api key revoked; evicted from cache");
    } catch (error) {
      // We cannot tell which key was revoked: forget them all.
      cache.clear();
      logger.warn({ err: error }, "unreadable revocation event; cache cleared");
    }
  }

  async function watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" || status.type === "staleConnection") {
        generation++;
        cache.setTrusted(false);
        logger.warn({ status: status.type }, "NATS disconnected; verified-key cache disabled");
      } else if (status.type === "reconnect") {
        void trustAfterFlush(nc);
      }
    }
  }

  async function run(): Promise<void> {
    while (!closed) {
      try {
        const nc = await connect({
          servers: deps.natsUrl,
          name: "subdata-gateway",
          ...(deps.credentials ? { user: deps.credentials.user, pass: deps.credentials.pass } : {}),
          maxReconnectAttempts: -1,
          reconnectTimeWait: 250,
        });
        if (closed) {
          await nc.close();
          return;
        }
        connection = nc;
        nc.subscribe(apiKeyRevokedSubject, {
          callback: (error, message) => {
            if (error) logger.warn({ err: error }, "revocation subscription error");
            else onRevoked(message.data);
          },
        });
        const watching = watch(nc);
        await trustAfterFlush(nc);
        const closedError = await nc.closed();
        generation++;
        cache.setTrusted(false);
        await watching.catch(() => undefined);
        if (closedError) logger.warn({ err: closedError }, "NATS connection closed");
      } catch (error) {
        logger.warn({ err: error }, "cannot connect to NATS; verifying every key with the auth service");
      }
      connection = undefined;
      if (!closed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, deps.retryDelayMs ?? 1_000);
          wakeRetry = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }

  return {
    start() {
      if (running) return;
      running = run();
    },
    async close() {
      closed = true;
      generation++;
      cache.setTrusted(false);
      wakeRetry?.();
      await connection?.close().catch(() => undefined);
      await running;
    },
  };
}
