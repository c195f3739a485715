import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { apiKeyRevokedSubject, connectNats, type NatsRole, natsInboxPrefix } from "@subdata/events";
import { createEventPublisher, ensureEventStream } from "@subdata/relay";
import { createLogger } from "@subdata/runtime";
import { createEventConsumer } from "../../services/webhook/src/ingest/event-consumer.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AuthenticatedNats, createAuthenticatedNats } from "../support/authenticated-nats.ts";
import { waitFor } from "../support/wait-for.ts";

// A nats-server of this file's own, configured with the users and permissions that deploy/nats ships:
// each process may use the subjects it needs and is refused everything else.
const settings = { stream: "SUBDATA_EVENTS", subjectPrefix: "subdata.events", consumer: "webhook-deliveries" };
const eventSubject = `${settings.subjectPrefix}.subscription.mer_forged`;
const logger = createLogger({ name: "test-nats-permissions", level: "silent" });

/** The errors each connection's server reported (status events), collected from the start. */
const reported = new WeakMap<NatsConnection, string[]>();

function collectErrors(nc: NatsConnection): void {
  const errors: string[] = [];
  reported.set(nc, errors);
  void (async () => {
    for await (const status of nc.status()) if (status.type === "error") errors.push(status.error.message);
  })();
}

/**
 * The permission errors the server sent for a plain publish to `subject` ("" when none). The server
 * handles a connection's commands in order, so its -ERR for the publish arrives before the PONG
 * that ends the flush; setImmediate lets the status iterator take it first.
 */
async function publishRefused(nc: NatsConnection, subject: string): Promise<string> {
  nc.publish(subject, new Uint8Array([1]));
  await nc.flush();
  await new Promise((resolve) => setImmediate(resolve));
  return (reported.get(nc) ?? []).filter((message) => message.includes(`Publish to "${subject}"`)).join("\n");
}

/** The error that closed a subscription to `subject` by the time the server answered a flush ("" if it is still open). */
async function subscribeRefused(nc: NatsConnection, subject: string): Promise<string> {
  const subscription = nc.subscribe(subject);
  await nc.flush();
  if (!subscription.isClosed()) {
    subscription.unsubscribe();
    return "";
  }
  const closed = await subscription.closed;
  return closed instanceof Error ? closed.message : "closed without an error";
}

/** The error of a request (a JetStream API call) to `subject`. */
async function requestRefused(nc: NatsConnection, subject: string): Promise<string> {
  try {
    await nc.request(subject, new TextEncoder().encode("{}"), { timeout: 30_000 });
    return "answered";
  } catch (error) {
    return (error as Error).message;
  }
}

describe("NATS users and their permissions", () => {
  let nats: AuthenticatedNats;
  const connections: Partial<Record<NatsRole, NatsConnection>> = {};
  const as = (role: NatsRole) => connections[role]!;

  beforeAll(async () => {
    nats = await createAuthenticatedNats(settings);
    await nats.start();
    for (const role of ["relay", "webhook", "auth", "gateway"] as const) {
      connections[role] = await connectNats(nats.url, role, nats.credentials[role]);
      collectErrors(connections[role]);
    }
  });

  afterAll(async () => {
    await Promise.allSettled(Object.values(connections).map((nc) => nc.close()));
    await nats?.dispose();
  });

  it("refuses a client without a user, with a wrong password, or with another role's user name and its own password", async () => {
    await expect(connect({ servers: nats.url, maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization/i);
    await expect(connect({ servers: nats.url, user: nats.credentials.relay.user, pass: "not-the-password", maxReconnectAttempts: 0 })).rejects.toThrow(
      /Authorization/i,
    );
    await expect(
      connect({ servers: nats.url, user: nats.credentials.relay.user, pass: nats.credentials.gateway.pass, maxReconnectAttempts: 0 }),
    ).rejects.toThrow(/Authorization/i);
  });

  it("lets the relay create the stream and publish events with acks, and the webhook service consume and ack them through its durable", async () => {
    await ensureEventStream(as("relay"), { stream: settings.stream, subjectPrefix: settings.subjectPrefix, replicas: 1 });
    // Twice: the second run updates the stream in place.
    await ensureEventStream(as("relay"), { stream: settings.stream, subjectPrefix: settings.subjectPrefix, replicas: 1 });
    const publisher = createEventPublisher(as("relay"), { stream: settings.stream, subjectPrefix: settings.subjectPrefix, replicas: 1 });
    for (const id of ["evt_1", "evt_2", "evt_3"]) {
      const ack = await publisher.publish({
        id,
        type: "subscription.created",
        resourceType: "subscription",
        merchantId: "mer_genuine",
        data: new Uint8Array([1]),
      });
      expect(ack.duplicate).toBe(false);
    }

    const stored: number[] = [];
    const release = new AbortController();
    const consumer = createEventConsumer(as("webhook"), {
      stream: settings.stream,
      subjectPrefix: settings.subjectPrefix,
      consumerName: settings.consumer,
      ackWaitMs: 30_000,
      logger,
      handle: {
        async lead() {
          return {
            async store(messages) {
              stored.push(...messages.map((message) => message.seq));
              return messages.map(() => ({ kind: "ack" as const }));
            },
            lost: release.signal,
            confirm: async () => true,
            republishUnstored: async () => 0,
            release: async () => {},
          };
        },
      },
    });
    consumer.start();
    try {
      await waitFor("three events stored", () => stored.length >= 3);
      const jsm = await jetstreamManager(as("webhook"));
      // The acks reached the server: the durable's floor is the last event.
      await waitFor("the acks counted", async () => (await jsm.consumers.info(settings.stream, settings.consumer)).ack_floor.stream_seq === 3);
      expect((await jsm.streams.info(settings.stream)).state.messages).toBe(3);
    } finally {
      await consumer.stop();
    }
    expect(stored).toEqual([1, 2, 3]);
  });

  it("lets auth publish revocations that the gateway receives", async () => {
    const received = as("gateway").subscribe(apiKeyRevokedSubject, { max: 1 });
    await as("gateway").flush();
    as("auth").publish(apiKeyRevokedSubject, new TextEncoder().encode("key_1"));
    await as("auth").flush();
    for await (const message of received) expect(message.string()).toBe("key_1");
    expect(received.getReceived()).toBe(1);
  });

  describe("refuses each process every subject outside its permissions", () => {
    const streamApi = (operation: string) => `$JS.API.STREAM.${operation}.${settings.stream}`;

    it.each([
      ["relay", "subscribing to the events", () => subscribeRefused(as("relay"), `${settings.subjectPrefix}.>`)],
      ["relay", "reading the webhook service's replies", () => subscribeRefused(as("relay"), `${natsInboxPrefix("webhook")}.>`)],
      ["relay", "publishing a revocation", () => publishRefused(as("relay"), apiKeyRevokedSubject)],
      ["relay", "deleting the stream", () => requestRefused(as("relay"), streamApi("DELETE"))],
      ["relay", "purging the stream", () => requestRefused(as("relay"), streamApi("PURGE"))],
      ["relay", "creating a consumer", () => requestRefused(as("relay"), `$JS.API.CONSUMER.CREATE.${settings.stream}.spy`)],
      ["webhook", "publishing an event", () => publishRefused(as("webhook"), eventSubject)],
      ["webhook", "subscribing to the events", () => subscribeRefused(as("webhook"), `${settings.subjectPrefix}.>`)],
      ["webhook", "reading the relay's replies", () => subscribeRefused(as("webhook"), `${natsInboxPrefix("relay")}.>`)],
      ["webhook", "deleting the stream", () => requestRefused(as("webhook"), streamApi("DELETE"))],
      ["webhook", "purging the stream", () => requestRefused(as("webhook"), streamApi("PURGE"))],
      ["webhook", "updating the stream", () => requestRefused(as("webhook"), streamApi("UPDATE"))],
      ["webhook", "creating another consumer", () => requestRefused(as("webhook"), `$JS.API.CONSUMER.CREATE.${settings.stream}.spy`)],
      ["webhook", "deleting another consumer", () => requestRefused(as("webhook"), `$JS.API.CONSUMER.DELETE.${settings.stream}.spy`)],
      ["webhook", "publishing a revocation", () => publishRefused(as("webhook"), apiKeyRevokedSubject)],
      ["auth", "publishing an event", () => publishRefused(as("auth"), eventSubject)],
      ["auth", "subscribing to the events", () => subscribeRefused(as("auth"), `${settings.subjectPrefix}.>`)],
      ["auth", "subscribing to everything", () => subscribeRefused(as("auth"), ">")],
      ["auth", "calling the JetStream API", () => requestRefused(as("auth"), "$JS.API.INFO")],
      ["gateway", "publishing a revocation", () => publishRefused(as("gateway"), apiKeyRevokedSubject)],
      ["gateway", "publishing an event", () => publishRefused(as("gateway"), eventSubject)],
      ["gateway", "subscribing to the events", () => subscribeRefused(as("gateway"), `${settings.subjectPrefix}.>`)],
      ["gateway", "deleting the stream", () => requestRefused(as("gateway"), streamApi("DELETE"))],
    ] as const)("%s: %s", async (_role, _what, attempt) => {
      expect(await attempt()).toMatch(/Permissions Violation/);
    });

    it("leaves the stream and its events in place after every refused attempt", async () => {
      const info = await (await jetstreamManager(as("webhook"))).streams.info(settings.stream);
      expect(info.state.messages).toBe(3);
      expect(info.state.subjects ?? {}).not.toHaveProperty(eventSubject);
    });
  });
});
