import type { Logger, Pool, PoolClient } from "@subdata/runtime";
import type { ClientBase } from "pg";
import type { AttemptResult } from "./deliver-webhook.ts";
import type { RenderedEvent } from "./event-body.ts";

/**
 * The SQL of webhook delivery. Delivery is purely table-driven: a PENDING webhook_deliveries row whose
 * next_attempt_at has passed is delivered, whoever inserted it (the event consumer, ResendEvent,
 * ReplayEvents, SendTestEvent). Inserting one and sending NOTIFY on DELIVERY_CHANNEL wakes the workers
 * of every replica at once; otherwise they find it at their next poll.
 */

export const DELIVERY_CHANNEL = "subdata_webhook_delivery";

/** A pool, or one connection (the ingest leader writes through the connection holding its lock). */
export type Queryable = Pool | ClientBase;

/**
 * Stores the event body and one delivery per enabled endpoint of the merchant that wants this type,
 * in one statement (one transaction, one round trip). Idempotent: a redelivered message adds nothing.
 * Returns how many deliveries were created.
 */
export async function ingestEvent(db: Queryable, event: RenderedEvent): Promise<number> {
  return ingestEvents(db, [event]);
}

/**
 * Stores a batch of events in the given (stream) order and one delivery per enabled endpoint of each
 * event's merchant that wants its type, in one statement: one transaction, one round trip, one NOTIFY
 * (only if deliveries were created). Deliveries are made only for events this statement inserted, so
 * a redelivered event adds nothing — not even for an endpoint created since the event was first
 * stored, which must not receive an old version after newer ones. Returns how many deliveries were
 * created.
 */
export async function ingestEvents(db: Queryable, events: readonly RenderedEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const columns = {
    id: [] as string[],
    merchantId: [] as string[],
    subscriptionId: [] as string[],
    type: [] as string[],
    version: [] as string[],
    occurredAt: [] as string[],
    body: [] as string[],
  };
  for (const event of events) {
    columns.id.push(event.id);
    columns.merchantId.push(event.merchantId);
    columns.subscriptionId.push(event.subscriptionId);
    columns.type.push(event.type);
    columns.version.push(event.version.toString());
    columns.occurredAt.push(event.occurredAtExact);
    columns.body.push(event.body);
  }
  const result = await db.query<{ created: number }>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[])
                WITH ORDINALITY AS i (id, merchant_id, subscription_id, type, version, occurred_at, body, ord)
     ), event AS (
       INSERT INTO webhook_events (id, merchant_id, subscription_id, type, version, occurred_at, body)
       SELECT id, merchant_id, subscription_id, type, version, occurred_at, body FROM input ORDER BY ord
       ON CONFLICT (id) DO NOTHING
       RETURNING id
     ), deliveries AS (
       INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, subscription_id, version)
       SELECT i.merchant_id, ep.id, i.id, i.subscription_id, i.version
         FROM input i
         JOIN event ON event.id = i.id
         JOIN webhook_endpoints ep
           ON ep.merchant_id = i.merchant_id AND ep.status = 'ENABLED'
          AND (cardinality(ep.event_types) = 0 OR i.type = ANY (ep.event_types))
        ORDER BY i.ord, ep.id
       ON CONFLICT (endpoint_id, event_id) DO NOTHING
       RETURNING 1
     ), notified AS (
       SELECT pg_notify('${DELIVERY_CHANNEL}', '') FROM (SELECT 1 FROM deliveries LIMIT 1) AS any_delivery
     )
     SELECT (SELECT count(*) FROM deliveries)::int AS created, (SELECT count(*) FROM notified)::int AS notified`,
    [columns.id, columns.merchantId, columns.subscriptionId, columns.type, columns.version, columns.occurredAt, columns.body],
  );
  return result.rows[0]?.created ?? 0;
}

export interface ClaimedDelivery {
  id: string;
  merchantId: string;
  endpointId: string;
  eventId: string;
  subscriptionId: string;
  version: bigint;
  /** This attempt's number (1 for the first); counted at claim so a crash mid-attempt still counts. */
  attemptNumber: number;
  url: string;
  body: string;
  secretCiphertext: Buffer;
  /** Present only while the rotation's grace period runs. */
  previousSecretCiphertext: Buffer | null;
}

export interface ClaimOptions {
  limit: number;
  /** In-flight deliveries allowed per endpoint (in this process). */
  perEndpointCap: number;
  /** This process's in-flight deliveries per endpoint. */
  inFlight: ReadonlyMap<string, number>;
  /** A claimed delivery is due again after this long if its worker vanished (crash → retry). */
  leaseMs: number;
  /** Only these merchants (tests sharing a database); undefined means all. */
  merchantIds?: readonly string[] | undefined;
}

/**
 * Claims due deliveries: only the lowest pending version of each (endpoint, subscription), so the
 * next version waits until this one succeeded or failed for good, while other subscriptions flow on.
 * SKIP LOCKED lets replicas share the work; moving next_attempt_at forward by the lease is the claim
 * itself (a claimed row is not due, so nobody else takes it, and it becomes due again if this worker
 * dies). Endpoints already at their cap are skipped so one slow receiver cannot take every slot.
 */
export async function claimDueDeliveries(pool: Pool, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  const busyIds: string[] = [];
  const busyCounts: number[] = [];
  const fullIds: string[] = [];
  for (const [endpointId, count] of options.inFlight) {
    busyIds.push(endpointId);
    busyCounts.push(count);
    if (count >= options.perEndpointCap) fullIds.push(endpointId);
  }
  const result = await pool.query<ClaimRow>(
    `WITH busy AS (
       SELECT * FROM unnest($3::text[], $4::int[]) AS b (endpoint_id, in_flight)
     ), due AS (
       SELECT d.id, d.endpoint_id, d.next_attempt_at
         FROM webhook_deliveries d
         JOIN webhook_endpoints ep ON ep.id = d.endpoint_id AND ep.status = 'ENABLED'
        WHERE d.status = 'PENDING' AND d.next_attempt_at <= now()
          AND d.endpoint_id <> ALL ($5::text[])
          AND ($8::text[] IS NULL OR d.merchant_id = ANY ($8::text[]))
          AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries p
                 WHERE p.endpoint_id = d.endpoint_id AND p.subscription_id = d.subscription_id
                   AND p.status = 'PENDING' AND (p.version, p.id) < (d.version, d.id))
        ORDER BY d.next_attempt_at, d.id
        LIMIT $7
     ), ranked AS (
       SELECT due.id,
              row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.id) AS rank,
              $2::int - coalesce(busy.in_flight, 0) AS room
         FROM due LEFT JOIN busy ON busy.endpoint_id = due.endpoint_id
     ), picked AS (
       SELECT d.id
         FROM webhook_deliveries d JOIN ranked ON ranked.id = d.id
        WHERE ranked.rank <= ranked.room AND d.status = 'PENDING' AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at, d.id
        LIMIT $1
        FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE webhook_deliveries d
        SET next_attempt_at = now() + $6::int * interval '1 millisecond',
            attempt_count = d.attempt_count + 1,
            last_attempt_at = now()
       FROM picked, webhook_events ev, webhook_endpoints ep
      WHERE d.id = picked.id AND ev.id = d.event_id AND ep.id = d.endpoint_id
     RETURNING d.id, d.merchant_id, d.endpoint_id, d.event_id, d.subscription_id, d.version, d.attempt_count,
               ep.url, ev.body, ep.secret_ciphertext,
               CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret_ciphertext END AS previous_secret_ciphertext`,
    [options.limit, options.perEndpointCap, busyIds, busyCounts, fullIds, Math.round(options.leaseMs), options.limit * 4, options.merchantIds ?? null],
  );
  return result.rows.map((row) => ({
    id: row.id,
    merchantId: row.merchant_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    subscriptionId: row.subscription_id,
    version: row.version,
    attemptNumber: row.attempt_count,
    url: row.url,
    body: row.body,
    secretCiphertext: row.secret_ciphertext,
    previousSecretCiphertext: row.previous_secret_ciphertext,
  }));
}

interface ClaimRow {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  event_id: string;
  subscription_id: string;
  version: bigint;
  attempt_count: number;
  url: string;
  body: string;
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
}

/** What to do with the delivery after an attempt (see retry-schedule.ts and delivery-worker.ts). */
export type DeliveryDecision =
  | { kind: "succeeded" }
  | { kind: "retry"; delayMs: number }
  | { kind: "failed" }
  | { kind: "gone" };

export interface RecordAttemptInput {
  delivery: ClaimedDelivery;
  attempt: AttemptResult;
  decision: DeliveryDecision;
  /** An endpoint whose first failure since its last success is older than this is disabled. */
  disableAfterMs: number;
  /** Reason recorded when that happens ("no successful delivery for 5d"). */
  disableReason: string;
}

export interface RecordedAttempt {
  /** Set when this attempt disabled the endpoint. */
  disabledReason: string | null;
}

export const GONE_REASON = "receiver answered 410 Gone";

/**
 * Logs the attempt and applies the decision in one transaction. Updates apply only while the delivery
 * is still PENDING: it may have been cancelled (endpoint disabled) or deleted while in flight.
 */
export async function recordAttempt(pool: Pool, input: RecordAttemptInput): Promise<RecordedAttempt> {
  const { delivery, attempt, decision } = input;
  return inTransaction(pool, async (client) => {
    await client.query(
      `INSERT INTO webhook_attempts
         (delivery_id, merchant_id, attempt_number, started_at, latency_micros, response_status, error_class, response_body)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8
        WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1)`,
      [
        delivery.id,
        delivery.merchantId,
        delivery.attemptNumber,
        attempt.startedAt.toISOString(),
        attempt.latencyMicros.toString(),
        attempt.status,
        attempt.errorClass,
        attempt.responseBody,
      ],
    );
    switch (decision.kind) {
      case "succeeded":
        await client.query(
          `UPDATE webhook_deliveries SET status = 'SUCCEEDED', delivered_at = now(), next_attempt_at = now()
            WHERE id = $1 AND status = 'PENDING'`,
          [delivery.id],
        );
        await client.query(
          "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL",
          [delivery.endpointId],
        );
        return { disabledReason: null };
      case "gone":
        return { disabledReason: (await disableEndpoint(client, delivery.endpointId, GONE_REASON, null)) ? GONE_REASON : null };
      case "retry":
        await client.query(
          `UPDATE webhook_deliveries SET next_attempt_at = now() + $2::bigint * interval '1 millisecond'
            WHERE id = $1 AND status = 'PENDING'`,
          [delivery.id, Math.round(decision.delayMs)],
        );
        break;
      case "failed":
        // FAILED releases the next version of this subscription for this endpoint.
        await client.query("UPDATE webhook_deliveries SET status = 'FAILED' WHERE id = $1 AND status = 'PENDING'", [delivery.id]);
        break;
    }
    await client.query("UPDATE webhook_endpoints SET failing_since = now() WHERE id = $1 AND failing_since IS NULL", [
      delivery.endpointId,
    ]);
    const disabled = await disableEndpoint(client, delivery.endpointId, input.disableReason, input.disableAfterMs);
    return { disabledReason: disabled ? input.disableReason : null };
  });
}

/**
 * Disables an enabled endpoint (when `failingForMs` is given: only if it has been failing that long)
 * and cancels its pending deliveries. Returns whether it did.
 */
async function disableEndpoint(client: PoolClient, endpointId: string, reason: string, failingForMs: number | null): Promise<boolean> {
  const disabled = await client.query(
    `UPDATE webhook_endpoints SET status = 'DISABLED', disabled_reason = $2, updated_at = now()
      WHERE id = $1 AND status = 'ENABLED'
        AND ($3::bigint IS NULL OR failing_since <= now() - $3::bigint * interval '1 millisecond')`,
    [endpointId, reason, failingForMs === null ? null : Math.round(failingForMs)],
  );
  if (!disabled.rowCount) return false;
  await client.query("UPDATE webhook_deliveries SET status = 'CANCELLED' WHERE endpoint_id = $1 AND status = 'PENDING'", [endpointId]);
  return true;
}

async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

export interface DeliveryWakeups {
  close(): Promise<void>;
}

/**
 * LISTENs on DELIVERY_CHANNEL with one pooled connection and calls `onWake` per notification, so rows
 * inserted by any replica or by the RPC handlers are picked up at once. Reconnects after errors;
 * polling covers the gaps.
 */
export function listenForDeliveries(pool: Pool, onWake: () => void, logger: Logger, retryMs = 2_000): DeliveryWakeups {
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
        if (message.channel === DELIVERY_CHANNEL) onWake();
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
