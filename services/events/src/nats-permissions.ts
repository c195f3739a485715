import { eventFilter } from "./event-stream.ts";

/**
 * Who may do what on NATS. Every process connects as its own user, and the server's permissions for
 * that user (rendered by natsAuthorizationConfig, deployed as deploy/nats/nats-server.conf) allow the
 * subjects it needs and nothing else:
 *
 * - relay: publish events (`<prefix>.>`), and the JetStream API it uses to create or update the
 *   stream and publish with acks (the PubAcks come back to its inbox);
 * - webhook: the API of its own durable consumer — create, inspect, delete (the rewind), pull — the
 *   acks of its messages, and reading the stream's info and single messages (metrics, the filter
 *   widening); it cannot publish an event, delete or purge the stream, or touch another consumer;
 * - auth: publish key revocations;
 * - gateway: subscribe to key revocations.
 *
 * Each process receives replies on an inbox prefix of its own, so no user can subscribe to another's
 * replies (a pull consumer's messages arrive on its inbox). Nobody may subscribe to the events'
 * subjects: the webhook service reads them through its consumer.
 */

export const natsRoles = ["relay", "webhook", "auth", "gateway"] as const;
export type NatsRole = (typeof natsRoles)[number];

/** Core NATS subject of key revocations: the auth service publishes, every gateway listens and evicts the key from its cache. */
export const apiKeyRevokedSubject = "subdata.auth.api_key.revoked";

/** The inbox prefix of a role's connection (requests' replies and pulled messages arrive below it). */
export function natsInboxPrefix(role: NatsRole): string {
  return `_INBOX.subdata-${role}`;
}

/** The default user name of each role; deployments may choose others (NATS_USER). */
export function defaultNatsUser(role: NatsRole): string {
  return `subdata-${role}`;
}

export interface NatsPermissionSettings {
  /** SUBDATA_EVENTS_STREAM */
  stream: string;
  /** SUBDATA_EVENTS_SUBJECT_PREFIX */
  subjectPrefix: string;
  /** SUBDATA_WEBHOOK_CONSUMER */
  consumer: string;
}

export interface NatsPermissions {
  /** Subjects the user may publish to (requests included); empty: none. */
  publish: string[];
  /** Subjects the user may subscribe to; empty: none. */
  subscribe: string[];
}

function natsPermissions(role: NatsRole, settings: NatsPermissionSettings): NatsPermissions {
  const { stream, subjectPrefix, consumer } = settings;
  const inbox = `${natsInboxPrefix(role)}.>`;
  switch (role) {
    case "relay":
      return {
        publish: [`${subjectPrefix}.>`, "$JS.API.INFO", `$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`, `$JS.API.STREAM.UPDATE.${stream}`],
        subscribe: [inbox],
      };
    case "webhook":
      return {
        publish: [
          "$JS.API.INFO",
          `$JS.API.STREAM.INFO.${stream}`,
          `$JS.API.STREAM.MSG.GET.${stream}`,
          `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
          `$JS.API.CONSUMER.DELETE.${stream}.${consumer}`,
          // Servers ≥ 2.9 take the filter in the subject; the client sends it when the consumer has one.
          `$JS.API.CONSUMER.CREATE.${stream}.${consumer}`,
          `$JS.API.CONSUMER.CREATE.${stream}.${consumer}.${eventFilter(subjectPrefix)}`,
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
          `$JS.ACK.${stream}.${consumer}.>`,
        ],
        subscribe: [inbox],
      };
    case "auth":
      return { publish: [apiKeyRevokedSubject], subscribe: [] };
    case "gateway":
      return { publish: [], subscribe: [apiKeyRevokedSubject] };
  }
}

/** Each role's user and how its password appears in the config (a literal, a bcrypt hash or `$VARIABLE`). */
export type NatsUsers = Record<NatsRole, { user: string; password: string }>;

function quoted(text: string): string {
  return JSON.stringify(text);
}

/** A password as the config takes it: an environment reference (`$NAME`) stays bare, anything else is quoted. */
function passwordValue(password: string): string {
  return /^\$[A-Za-z_][A-Za-z0-9_]*$/.test(password) ? password : quoted(password);
}

function permissionBlock(kind: "publish" | "subscribe", subjects: readonly string[]): string {
  // An empty allow list would allow everything: deny every subject instead.
  const rule = subjects.length === 0 ? `deny: [">"]` : `allow: [${subjects.map(quoted).join(", ")}]`;
  return `        ${kind}: { ${rule} }`;
}

/**
 * The `authorization` block of a nats-server config giving each role its user and permissions. With
 * an authorization block the server refuses every client without a valid user.
 */
export function natsAuthorizationConfig(settings: NatsPermissionSettings, users: NatsUsers): string {
  const entries = natsRoles.map((role) => {
    const permissions = natsPermissions(role, settings);
    return [
      "    {",
      `      user: ${quoted(users[role].user)}`,
      `      password: ${passwordValue(users[role].password)}`,
      "      permissions: {",
      permissionBlock("publish", permissions.publish),
      permissionBlock("subscribe", permissions.subscribe),
      "      }",
      "    }",
    ].join("\n");
  });
  return ["authorization: {", "  users: [", ...entries, "  ]", "}"].join("\n");
}
