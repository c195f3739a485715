import { create } from "@bufbuild/protobuf";
import { DurationSchema, FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { EndpointSchema, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { errorDetailOf, ErrorReason } from "@subdata/runtime";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminPool, fixturesOf, insertWebhookEvent, type RunningWebhookServer, startWebhookServer } from "./webhook-server.ts";
import { rpcError } from "@subdata/runtime/test-support";

let server: RunningWebhookServer;
let db: pg.Pool;

beforeAll(async () => {
  db = adminPool();
  server = await startWebhookServer();
});

afterAll(async () => {
  await server?.stop();
  await db?.end();
});

const PUBLIC_URL = "https://93.184.215.14/webhooks";

async function newMerchant(): Promise<string> {
  return fixturesOf(db).merchant();
}

async function createEndpoint(merchantId: string, init: { url?: string; eventTypes?: EventType[] } = {}) {
  return server.endpoints.createEndpoint({ merchantId, url: init.url ?? PUBLIC_URL, eventTypes: init.eventTypes ?? [] });
}

describe("CreateEndpoint", () => {
  it("returns a whsec_ secret once and stores it only sealed", async () => {
    const merchantId = await newMerchant();
    const created = await server.endpoints.createEndpoint({
      merchantId,
      url: PUBLIC_URL,
      description: "orders system",
      eventTypes: [EventType.SUBSCRIPTION_CREATED, EventType.SUBSCRIPTION_DELETED, EventType.CHARGE_UPDATED, EventType.ORDER_CREATED],
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice("whsec_".length), "base64")).toHaveLength(32);
    const endpoint = created.endpoint!;
    expect(endpoint.id).toMatch(/^we_[0-9a-f]{32}$/);
    expect(endpoint).toMatchObject({
      merchantId,
      url: PUBLIC_URL,
      description: "orders system",
      eventTypes: [EventType.SUBSCRIPTION_CREATED, EventType.SUBSCRIPTION_DELETED, EventType.CHARGE_UPDATED, EventType.ORDER_CREATED],
      status: EndpointStatus.ENABLED,
      disabledReason: "",
    });
    expect(endpoint.previousSecretExpiresAt).toBeUndefined();

    // Scan the whole row as text: the plaintext secret (and its base64 body) appears nowhere.
    const row = await db.query<{ whole: string; secret_ciphertext: Buffer; event_types: string[] }>(
      "SELECT w::text AS whole, secret_ciphertext, event_types FROM webhook_endpoints w WHERE id = $1",
      [endpoint.id],
    );
    const secretBody = created.secret.slice("whsec_".length);
    expect(row.rows[0]!.whole).not.toContain(secretBody);
    expect(row.rows[0]!.secret_ciphertext.toString("latin1")).not.toContain(secretBody);
    expect(row.rows[0]!.secret_ciphertext.includes(Buffer.from(secretBody, "base64"))).toBe(false);
    expect(row.rows[0]!.event_types).toEqual(["subscription.created", "subscription.deleted", "charge.updated", "order.created"]);
    // …but it opens with the service key, bound to this endpoint's id.
    expect(server.secretBox.open(row.rows[0]!.secret_ciphertext, endpoint.id)).toBe(created.secret);
  });

  it("never returns the secret from get or list", async () => {
    const merchantId = await newMerchant();
    const created = await createEndpoint(merchantId);
    const got = await server.endpoints.getEndpoint({ merchantId, endpointId: created.endpoint!.id });
    const listed = await server.endpoints.listEndpoints({ merchantId });
    for (const message of [got, listed]) {
      const text = JSON.stringify(message, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));
      expect(text).not.toContain("whsec_");
      expect(text).not.toContain(created.secret.slice("whsec_".length));
    }
    expect(got.endpoint).toEqual(created.endpoint);
    expect(listed.endpoints).toEqual([created.endpoint]);
  });

  it("answers NOT_FOUND for an unknown merchant", async () => {
    const error = await rpcError(createEndpoint("mer_00000000000000000000000000000000"));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toContain("merchant");
  });

  it("refuses unknown and repeated event types", async () => {
    const merchantId = await newMerchant();
    for (const eventTypes of [[EventType.UNSPECIFIED], [EventType.SUBSCRIPTION_CREATED, EventType.SUBSCRIPTION_CREATED], [99 as EventType]]) {
      const error = await rpcError(createEndpoint(merchantId, { eventTypes }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(errorDetailOf(error)?.fieldViolations[0]?.field).toBe("event_types");
    }
  });

  const refusedTargets = [
    "http://127.0.0.1",
    "http://localhost",
    "http://10.0.0.1",
    "http://172.16.0.1",
    "http://192.168.0.1",
    "http://169.254.169.254",
    "http://[::1]",
    "http://[fc00::1]",
    "http://[::ffff:127.0.0.1]",
    "http://2130706433",
    "http://0177.0.0.1",
    "http://0x7f.0.0.1",
  ];
  // The same targets over https: refused for the address, not only for the scheme.
  const refused = [
    ...refusedTargets,
    ...refusedTargets.map((url) => url.replace(/^http:/, "https:")),
    "ftp://93.184.215.14/",
    "file:///etc/passwd",
    "gopher://93.184.215.14/",
    "https://user:pass@93.184.215.14/",
    "https://user@93.184.215.14/",
    "not a url",
    `https://93.184.215.14/${"a".repeat(2048)}`,
  ];

  it.each(refused)("refuses %s with URL_REFUSED while private targets are not allowed", async (url) => {
    const merchantId = await newMerchant();
    const error = await rpcError(createEndpoint(merchantId, { url }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(errorDetailOf(error)?.reason).toBe(ErrorReason.URL_REFUSED);
    const rows = await db.query("SELECT 1 FROM webhook_endpoints WHERE merchant_id = $1", [merchantId]);
    expect(rows.rowCount).toBe(0);
  });

  describe("with SUBDATA_WEBHOOK_ALLOW_PRIVATE=true", () => {
    let permissive: RunningWebhookServer;
    beforeAll(async () => {
      permissive = await startWebhookServer({ allowPrivate: true });
    });
    afterAll(async () => {
      await permissive?.stop();
    });

    it.each(refusedTargets)("accepts %s (http included)", async (url) => {
      const merchantId = await newMerchant();
      const created = await permissive.endpoints.createEndpoint({ merchantId, url });
      expect(created.endpoint!.url).toBe(new URL(url).toString());
    });

    it.each(["ftp://127.0.0.1/", "file:///etc/passwd", "http://user:pass@127.0.0.1/"])("still refuses %s", async (url) => {
      const merchantId = await newMerchant();
      const error = await rpcError(permissive.endpoints.createEndpoint({ merchantId, url }));
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.URL_REFUSED);
    });
  });
});

describe("ListEndpoints", () => {
  it("pages oldest first with tokens bound to the merchant", async () => {
    const merchantId = await newMerchant();
    const other = await newMerchant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createEndpoint(merchantId)).endpoint!.id);
    await createEndpoint(other);

    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await server.endpoints.listEndpoints({ merchantId, pageSize: 2, pageToken });
      seen.push(...page.endpoints.map((endpoint) => endpoint.id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== "" && pages < 10);
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);

    const first = await server.endpoints.listEndpoints({ merchantId, pageSize: 2 });
    const error = await rpcError(server.endpoints.listEndpoints({ merchantId: other, pageSize: 2, pageToken: first.nextPageToken }));
    expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
  });
});

describe("UpdateEndpoint", () => {
  const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });

  it("changes only the fields in update_mask", async () => {
    const merchantId = await newMerchant();
    const created = (await server.endpoints.createEndpoint({ merchantId, url: PUBLIC_URL, description: "before" })).endpoint!;
    const updated = await server.endpoints.updateEndpoint({
      merchantId,
      endpoint: create(EndpointSchema, {
        id: created.id,
        url: "https://93.184.215.15/new",
        description: "after",
        eventTypes: [EventType.SUBSCRIPTION_UPDATED, EventType.ORDER_UPDATED],
      }),
      updateMask: mask("description", "event_types"),
    });
    expect(updated.endpoint).toMatchObject({
      url: PUBLIC_URL,
      description: "after",
      eventTypes: [EventType.SUBSCRIPTION_UPDATED, EventType.ORDER_UPDATED],
      status: EndpointStatus.ENABLED,
    });
    const moved = await server.endpoints.updateEndpoint({
      merchantId,
      endpoint: create(EndpointSchema, { id: created.id, url: "https://93.184.215.15/new" }),
      updateMask: mask("url"),
    });
    expect(moved.endpoint).toMatchObject({ url: "https://93.184.215.15/new", description: "after" });
  });

  it("validates the new URL and the mask", async () => {
    const merchantId = await newMerchant();
    const id = (await createEndpoint(merchantId)).endpoint!.id;
    const refused = await rpcError(
      server.endpoints.updateEndpoint({
        merchantId,
        endpoint: create(EndpointSchema, { id, url: "https://169.254.169.254/" }),
        updateMask: mask("url"),
      }),
    );
    expect(errorDetailOf(refused)?.reason).toBe(ErrorReason.URL_REFUSED);
    expect(errorDetailOf(refused)?.fieldViolations[0]?.field).toBe("endpoint.url");
    for (const paths of [[], ["secret"], ["merchant_id"]]) {
      const error = await rpcError(server.endpoints.updateEndpoint({ merchantId, endpoint: create(EndpointSchema, { id }), updateMask: mask(...paths) }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(errorDetailOf(error)?.fieldViolations[0]?.field).toBe("update_mask");
    }
    const badStatus = await rpcError(server.endpoints.updateEndpoint({ merchantId, endpoint: create(EndpointSchema, { id }), updateMask: mask("status") }));
    expect(errorDetailOf(badStatus)?.fieldViolations[0]?.field).toBe("endpoint.status");
  });

  it("disabling cancels pending deliveries; re-enabling clears the reason and the failure clock", async () => {
    const merchantId = await newMerchant();
    const id = (await createEndpoint(merchantId)).endpoint!.id;
    const eventId = await insertWebhookEvent(db, { merchantId, occurredAt: "2026-01-01 00:00:00+00" });
    await server.deliveries.resendEvent({ merchantId, endpointId: id, eventId });
    await db.query("UPDATE webhook_endpoints SET failing_since = now() - interval '1 day' WHERE id = $1", [id]);

    const disabled = await server.endpoints.updateEndpoint({
      merchantId,
      endpoint: create(EndpointSchema, { id, status: EndpointStatus.DISABLED }),
      updateMask: mask("status"),
    });
    expect(disabled.endpoint).toMatchObject({ status: EndpointStatus.DISABLED, disabledReason: "disabled by the merchant" });
    const deliveries = await db.query<{ status: string }>("SELECT status FROM webhook_deliveries WHERE endpoint_id = $1", [id]);
    expect(deliveries.rows).toEqual([{ status: "CANCELLED" }]);

    const enabled = await server.endpoints.updateEndpoint({
      merchantId,
      endpoint: create(EndpointSchema, { id, status: EndpointStatus.ENABLED }),
      updateMask: mask("status"),
    });
    expect(enabled.endpoint).toMatchObject({ status: EndpointStatus.ENABLED, disabledReason: "" });
    const row = await db.query("SELECT disabled_reason, failing_since FROM webhook_endpoints WHERE id = $1", [id]);
    expect(row.rows[0]).toEqual({ disabled_reason: null, failing_since: null });
  });
});

describe("DeleteEndpoint", () => {
  it("removes the endpoint and its pending deliveries; a repeat answers NOT_FOUND", async () => {
    const merchantId = await newMerchant();
    const id = (await createEndpoint(merchantId)).endpoint!.id;
    const eventId = await insertWebhookEvent(db, { merchantId, occurredAt: "2026-01-01 00:00:00+00" });
    await server.deliveries.resendEvent({ merchantId, endpointId: id, eventId });

    await server.endpoints.deleteEndpoint({ merchantId, endpointId: id });
    const left = await db.query(
      "SELECT (SELECT count(*) FROM webhook_endpoints WHERE id = $1)::int AS endpoints, (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'PENDING')::int AS pending",
      [id],
    );
    expect(left.rows[0]).toEqual({ endpoints: 0, pending: 0 });
    expect((await rpcError(server.endpoints.getEndpoint({ merchantId, endpointId: id }))).code).toBe(Code.NotFound);
    expect((await rpcError(server.endpoints.deleteEndpoint({ merchantId, endpointId: id }))).code).toBe(Code.NotFound);
    // The event itself stays: other endpoints may still owe or have delivered it.
    expect((await db.query("SELECT 1 FROM webhook_events WHERE id = $1", [eventId])).rowCount).toBe(1);
  });
});

describe("RotateSecret", () => {
  const duration = (seconds: number) => create(DurationSchema, { seconds: BigInt(seconds) });

  async function secretsOf(id: string) {
    const row = await db.query<{
      secret_ciphertext: Buffer;
      previous_secret_ciphertext: Buffer | null;
      grace_seconds: number | null;
    }>(
      `SELECT secret_ciphertext, previous_secret_ciphertext,
         extract(epoch FROM previous_secret_expires_at - updated_at)::float8 AS grace_seconds
       FROM webhook_endpoints WHERE id = $1`,
      [id],
    );
    return row.rows[0]!;
  }

  it("moves the current secret to previous until now + grace (24 h by default) and returns the new one once", async () => {
    const merchantId = await newMerchant();
    const created = await createEndpoint(merchantId);
    const id = created.endpoint!.id;

    const rotated = await server.endpoints.rotateSecret({ merchantId, endpointId: id });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.endpoint!.previousSecretExpiresAt).toBeDefined();
    const stored = await secretsOf(id);
    expect(server.secretBox.open(stored.secret_ciphertext, id)).toBe(rotated.secret);
    expect(server.secretBox.open(stored.previous_secret_ciphertext!, id)).toBe(created.secret);
    expect(stored.grace_seconds).toBe(24 * 3600);

    const again = await server.endpoints.rotateSecret({ merchantId, endpointId: id, gracePeriod: duration(7 * 86_400) });
    const storedAgain = await secretsOf(id);
    expect(server.secretBox.open(storedAgain.previous_secret_ciphertext!, id)).toBe(rotated.secret);
    expect(server.secretBox.open(storedAgain.secret_ciphertext, id)).toBe(again.secret);
    expect(storedAgain.grace_seconds).toBe(7 * 86_400);
    const listed = JSON.stringify((await server.endpoints.listEndpoints({ merchantId })).endpoints[0], (_k, v: unknown) =>
      typeof v === "bigint" ? v.toString() : v,
    );
    expect(listed).not.toContain("whsec_");
  });

  it("with a grace period of 0 keeps no previous secret", async () => {
    const merchantId = await newMerchant();
    const id = (await createEndpoint(merchantId)).endpoint!.id;
    const rotated = await server.endpoints.rotateSecret({ merchantId, endpointId: id, gracePeriod: duration(0) });
    expect(rotated.endpoint!.previousSecretExpiresAt).toBeUndefined();
    const stored = await secretsOf(id);
    expect(stored.previous_secret_ciphertext).toBeNull();
    expect(stored.grace_seconds).toBeNull();
  });

  it.each([-1, 7 * 86_400 + 1, 30 * 86_400])("refuses a grace period of %i seconds", async (seconds) => {
    const merchantId = await newMerchant();
    const id = (await createEndpoint(merchantId)).endpoint!.id;
    const error = await rpcError(server.endpoints.rotateSecret({ merchantId, endpointId: id, gracePeriod: duration(seconds) }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(errorDetailOf(error)?.fieldViolations[0]?.field).toBe("grace_period");
  });
});

describe("service credential", () => {
  it("answers UNAUTHENTICATED without it, and with a wrong one", async () => {
    for (const headers of [{}, { authorization: "Bearer wrong-token-wrong-token-wrong-token" }]) {
      const transport = createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2" });
      const client = createClient(WebhookEndpointService, transport);
      const error = await rpcError(client.listEndpoints({ merchantId: "mer_x" }, { headers }));
      expect(error.code).toBe(Code.Unauthenticated);
    }
  });
});
