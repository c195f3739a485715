import { connect, type NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { type NatsCredentials, natsCredentialShape } from "@subdata/runtime";
import { type ResourceType, resourceTypes } from "./change-events.ts";
import { natsInboxPrefix, type NatsRole } from "./nats-permissions.ts";

/**
 * Where the change events travel: the JetStream stream the relay publishes to and the webhook service
 * consumes from, its subjects, and the connection both open.
 */

/** The variables of both ends, spread into the relay's and the webhook service's config shapes. */
export const eventStreamConfigShape = {
  NATS_URL: z
    .string()
    .regex(/^(nats|tls|wss?):\/\//, "must be a nats:// URL")
    .default("nats://127.0.0.1:4222"),
  SUBDATA_EVENTS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, "must be a JetStream stream name")
    .default("SUBDATA_EVENTS"),
  SUBDATA_EVENTS_SUBJECT_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, "must be dot-separated subject tokens without wildcards")
    .default("subdata.events"),
  // NATS_USER, NATS_PASSWORD (and NODE_ENV, which makes them required): this process's own NATS user.
  ...natsCredentialShape,
} as const;

/**
 * The subject of a merchant's events of one resource: `<prefix>.<resource>.<merchant_id>`
 * (`subscription`, `charge`, `order`; merchant ids are `mer_<hex>`, valid subject tokens).
 */
export function eventSubject(subjectPrefix: string, resourceType: ResourceType, merchantId: string): string {
  return `${subjectPrefix}.${resourceType}.${merchantId}`;
}

/** Every merchant's events of one resource: `<prefix>.<resource>.>`. */
export function resourceEventFilter(subjectPrefix: string, resourceType: ResourceType): string {
  return `${subjectPrefix}.${resourceType}.>`;
}

/**
 * Every event of every merchant: `<prefix>.*.*`. One subject, not one per resource: NATS before 2.10
 * takes a single filter subject per consumer.
 */
export function eventFilter(subjectPrefix: string): string {
  return `${subjectPrefix}.*.*`;
}

/** The resource whose events a subject carries (its next-to-last token); undefined for any other subject. */
export function resourceTypeOfSubject(subject: string): ResourceType | undefined {
  const last = subject.lastIndexOf(".");
  if (last <= 0) return undefined;
  // Sliced rather than split: ingest asks this of every consumed message.
  const token = subject.slice(subject.lastIndexOf(".", last - 1) + 1, last);
  return resourceTypes.find((type) => type === token);
}

/**
 * A NATS connection that keeps reconnecting forever: both ends outlive NATS restarts. No async
 * traces: otherwise the client builds an Error (a stack capture) for every request and publish ack
 * "just in case", about a fifth of the relay's CPU; a failed publish still says what failed. Replies
 * arrive below the role's own inbox prefix, the only one its NATS user may subscribe to
 * (nats-permissions.ts); `credentials` are its NATS_USER and NATS_PASSWORD, when set.
 */
export function connectNats(url: string, role: NatsRole, credentials?: NatsCredentials): Promise<NatsConnection> {
  return connect({
    servers: url,
    name: `subdata-${role}`,
    inboxPrefix: natsInboxPrefix(role),
    ...(credentials ? { user: credentials.user, pass: credentials.pass } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1_000,
    timeout: 5_000,
    noAsyncTraces: true,
  });
}
