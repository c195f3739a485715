import { create, toBinary } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { apiKeyRevokedSubject } from "@subdata/events";
import type { Logger, NatsCredentials } from "@subdata/runtime";
import { ApiKeyRevokedEventSchema } from "@subdata/proto/subdata/events/v1/api_key_event_pb";

export interface ApiKeyRevocation {
  apiKeyId: string;
  merchantId: string;
  revokedAt: Timestamp;
}

/**
 * Tells the gateways that a key was revoked. The revocation itself is already committed in Postgres
 * when publish() is called, so publishing must never fail the RPC: events are queued and retried until
 * the NATS server has confirmed them (a flush round-trip), or the process stops. Core NATS is
 * fire-and-forget, so a gateway that is disconnected at that moment misses the event; that is why
 * gateways also cap how long they cache a verified key, and a missed event converges within that cap.
 * Duplicates (a retry after an unconfirmed publish) are harmless: eviction is idempotent. The queue is
 * bounded (maxPending): during a long NATS outage the oldest events are dropped first, which costs
 * nothing the key cache's TTL does not already cover.
 *
 * This is the only module of the auth service that talks to NATS.
 */
export interface RevocationPublisher {
  publish(revocation: ApiKeyRevocation): void;
  /** Events waiting to be confirmed: at most `maxPending`. */
  readonly queued: number;
  /** Stops retrying after one last attempt, and closes the connection. */
  close(): Promise<void>;
}

export interface NatsRevocationPublisherOptions {
  /** e.g. "nats://127.0.0.1:4222". */
  servers: string;
  /** Auth's NATS user (NATS_USER, NATS_PASSWORD), when the server requires one: it may publish revocations only. */
  credentials?: NatsCredentials | undefined;
  logger: Logger;
  /** Pause between attempts while NATS is unreachable (default 1 s). */
  retryDelayMs?: number;
  /** How long to wait for the server to confirm a publish (default 2 s). */
  confirmTimeoutMs?: number;
  /** Events queued at most while NATS is unreachable (default 10,000); the oldest go first. */
  maxPending?: number;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function createNatsRevocationPublisher(options: NatsRevocationPublisherOptions): RevocationPublisher {
  const retryDelayMs = options.retryDelayMs ?? 1_000;
  const confirmTimeoutMs = options.confirmTimeoutMs ?? 2_000;
  const maxPending = options.maxPending ?? 10_000;
  const pending: Uint8Array[] = [];
  let dropped = 0;
  let connection: NatsConnection | undefined;
  let closed = false;
  // Resolves the current idle wait or retry pause early (new event, or close()).
  let wake: (() => void) | undefined;
  const pause = (ms?: number) =>
    new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  async function connection_(): Promise<NatsConnection> {
    if (connection && !connection.isClosed()) return connection;
    // No waitOnFirstConnect: our own loop retries, so close() can stop it. Once connected, the client
    // reconnects by itself, forever.
    connection = await connect({
      servers: options.servers,
      name: "subdata-auth",
      ...(options.credentials ? { user: options.credentials.user, pass: options.credentials.pass } : {}),
      maxReconnectAttempts: -1,
      reconnectTimeWait: retryDelayMs,
      timeout: confirmTimeoutMs,
    });
    return connection;
  }

  /** Publishes everything queued and waits for the server's confirmation; throws if it did not come. */
  async function publishPending(): Promise<void> {
    const nc = await connection_();
    const batch = pending.slice();
    const droppedBefore = dropped;
    for (const data of batch) nc.publish(apiKeyRevokedSubject, data);
    await withTimeout(nc.flush(), confirmTimeoutMs, "NATS flush");
    // Events dropped from the head meanwhile shifted the batch's position in the queue.
    pending.splice(0, Math.max(0, batch.length - (dropped - droppedBefore)));
  }

  let failures = 0;
  async function run(): Promise<void> {
    while (!closed) {
      if (pending.length === 0) {
        await pause();
        continue;
      }
      try {
        await publishPending();
        if (failures > 0) options.logger.info({ failures }, "revocation events published after retrying");
        failures = 0;
      } catch (error) {
        failures++;
        // Once per outage is enough in the logs; the event stays queued.
        if (failures === 1) options.logger.warn({ err: error, queued: pending.length }, "could not publish revocation events; retrying");
        if (!closed) await pause(retryDelayMs);
      }
    }
  }
  const loop = run();

  return {
    publish(revocation) {
      const event = create(ApiKeyRevokedEventSchema, {
        apiKeyId: revocation.apiKeyId,
        merchantId: revocation.merchantId,
        revokedAt: revocation.revokedAt,
      });
      if (pending.length >= maxPending) {
        pending.shift();
        dropped++;
        if (dropped === 1 || dropped % 1_000 === 0) {
          options.logger.warn(
            { dropped, maxPending },
            "revocation queue full while NATS is unreachable; oldest events dropped (gateways converge when their key cache expires)",
          );
        }
      }
      pending.push(toBinary(ApiKeyRevokedEventSchema, event));
      wake?.();
    },
    get queued() {
      return pending.length;
    },
    async close() {
      closed = true;
      wake?.();
      await loop;
      if (pending.length > 0 && connection && !connection.isClosed()) {
        await publishPending().catch(() => {});
      }
      if (pending.length > 0) {
        options.logger.error({ lost: pending.length }, "revocation events not published; gateways converge when their key cache expires");
      }
      if (connection && !connection.isClosed()) await withTimeout(connection.drain(), confirmTimeoutMs, "NATS drain").catch(() => connection?.close());
    },
  };
}
