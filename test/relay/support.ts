import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { type ChangeEvent, ChangeEventSchema } from "@subdata/proto/subdata/events/v1/change_event_pb";
import { type SubscriptionEvent, SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import type { Queryable } from "@subdata/runtime";
import { freePort } from "../support/free-port.ts";

/** A merchant with one customer and one plan, fresh ids. */
export async function createMerchant(db: Queryable, name: string): Promise<{ merchantId: string; customerId: string; planId: string }> {
  const merchant = await db.query<{ id: string }>("INSERT INTO merchants (name) VALUES ($1) RETURNING id", [name]);
  const merchantId = merchant.rows[0]!.id;
  const customer = await db.query<{ id: string }>("INSERT INTO customers (merchant_id, email, name) VALUES ($1, 'ada@example.com', 'Ada') RETURNING id", [
    merchantId,
  ]);
  const plan = await db.query<{ id: string }>(
    "INSERT INTO plans (merchant_id, name, interval, interval_count, price_minor, currency) VALUES ($1, 'Box', 'MONTH', 1, 1999, 'USD') RETURNING id",
    [merchantId],
  );
  return { merchantId, customerId: customer.rows[0]!.id, planId: plan.rows[0]!.id };
}

export async function createSubscription(db: Queryable, owner: { merchantId: string; customerId: string; planId: string }): Promise<string> {
  const result = await db.query<{ id: string }>(
    `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
     VALUES ($1, $2, $3, 'ACTIVE', 1999, 'USD', now(), now() + interval '1 month') RETURNING id`,
    [owner.merchantId, owner.customerId, owner.planId],
  );
  return result.rows[0]!.id;
}

export interface OutboxRecord {
  id: string;
  resource_type: string;
  resource_id: string;
  event_type: string;
  version: string;
  published_at: string | null;
  attempts: number;
  last_error: string | null;
  /** The change_events row's payload: the object, the keys of the previous state that differed, the changed columns. */
  payload: { object: Record<string, unknown>; previous: Record<string, unknown> | null; changed_columns: string[] };
}

/** A merchant's outbox rows with their events, in capture order (read as the admin, int8 as text). */
export async function outboxRows(db: Queryable, merchantId: string): Promise<OutboxRecord[]> {
  const result = await db.query<OutboxRecord>(
    `SELECT o.id, e.resource_type, o.resource_id, e.event_type, e.version::text AS version, o.published_at::text AS published_at,
            o.attempts, o.last_error, e.payload
       FROM event_outbox o JOIN change_events e ON e.id = o.id
      WHERE o.merchant_id = $1 ORDER BY o.seq`,
    [merchantId],
  );
  return result.rows;
}

export { waitFor } from "../support/wait-for.ts";

export interface StreamMessage {
  seq: number;
  subject: string;
  msgId: string | undefined;
  /** Every message as a ChangeEvent; a subscription's SubscriptionEvent converted the way ingest does. */
  event: ChangeEvent;
  /** Only for messages on a subscription subject: the SubscriptionEvent as published. */
  subscriptionEvent?: SubscriptionEvent;
}

/** Every message in the stream, in stream order, decoded by its subject's resource. */
export async function readStream(nc: NatsConnection, stream: string): Promise<StreamMessage[]> {
  const jsm = await jetstreamManager(nc);
  const { state } = await jsm.streams.info(stream);
  const messages: StreamMessage[] = [];
  if (state.messages === 0) return messages;
  for (let seq = state.first_seq; seq <= state.last_seq; seq += 1) {
    const stored = await jsm.streams.getMessage(stream, { seq });
    if (!stored) continue;
    const common = { seq, subject: stored.subject, msgId: stored.header?.get("Nats-Msg-Id") };
    if (stored.subject.split(".").at(-2) === "subscription") {
      const subscriptionEvent = fromBinary(SubscriptionEventSchema, stored.data);
      messages.push({ ...common, event: changeEventFromSubscriptionEvent(subscriptionEvent), subscriptionEvent });
    } else {
      messages.push({ ...common, event: fromBinary(ChangeEventSchema, stored.data) });
    }
  }
  return messages;
}

export async function deleteStream(nc: NatsConnection, stream: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(stream).catch(() => false);
}

/** A private nats-server (JetStream, file store in a temp dir) this test can stop and restart. */
export interface PrivateNats {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Stops the server and removes its store. */
  dispose(): Promise<void>;
}

export async function createPrivateNats(binary = "/usr/sbin/nats-server"): Promise<PrivateNats> {
  const port = await freePort();
  const storeDir = await mkdtemp(path.join(os.tmpdir(), "subdata-relay-nats-"));
  let child: ChildProcess | undefined;
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    await exited;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    async start() {
      const started = spawn(binary, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir], { stdio: ["ignore", "ignore", "pipe"] });
      child = started;
      await new Promise<void>((resolve, reject) => {
        let output = "";
        started.stderr!.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes("Server is ready")) resolve();
        });
        started.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${output}`)));
        started.once("error", reject);
      });
    },
    stop,
    async dispose() {
      await stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}
