import { Code, ConnectError } from "@connectrpc/connect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../gateway/gateway-harness.ts";
import { type RunningWebhookServer, startWebhookServer } from "../webhook-api/webhook-server.ts";

/**
 * OWASP API1 (broken object-level authorisation): merchant A's credentials never reach merchant B's
 * objects, on every public route and every tenant-scoped RPC; B's id answers exactly like an unknown id.
 */

async function rpcCode(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

describe("object-level authorisation across merchants", () => {
  let h: GatewayHarness;
  let webhook: RunningWebhookServer;
  const a = { merchantId: "", key: "", apiKeyId: "" };
  const b = { merchantId: "", subscriptionId: "", orderId: "", apiKeyId: "", endpointId: "" };

  beforeAll(async () => {
    h = await startGatewayHarness();
    webhook = await startWebhookServer({ allowPrivate: true });
    a.merchantId = await h.fixtures.merchant();
    await h.fixtures.subscription({ merchantId: a.merchantId });
    ({ key: a.key, apiKeyId: a.apiKeyId } = await h.createKey(a.merchantId));
    b.merchantId = await h.fixtures.merchant();
    b.subscriptionId = (await h.fixtures.subscription({ merchantId: b.merchantId })).id;
    b.orderId = (await h.fixtures.order({ merchantId: b.merchantId, subscriptionId: b.subscriptionId })).id;
    b.apiKeyId = (await h.createKey(b.merchantId)).apiKeyId;
    const endpoint = await webhook.endpoints.createEndpoint({ merchantId: b.merchantId, url: "http://127.0.0.1:9/hook" });
    b.endpointId = endpoint.endpoint!.id;
  });

  afterAll(async () => {
    await webhook?.stop();
    await h?.close();
  });

  it("REST: B's subscription answers exactly like an unknown id", async () => {
    const foreign = await h.request(a.key, `/subscriptions/${b.subscriptionId}`);
    const unknown = await h.request(a.key, "/subscriptions/sub_doesnotexist000000000000");
    expect(foreign.statusCode).toBe(404);
    const strip = (body: string) => {
      const { request_id: _r, instance: _i, ...rest } = JSON.parse(body) as Record<string, unknown>;
      return rest;
    };
    expect(strip(foreign.body)).toEqual(strip(unknown.body));
    expect(foreign.body).not.toContain(b.merchantId);
  });

  it("REST: lists never show B's rows, whatever filter names B's ids", async () => {
    const subscriptions = JSON.parse((await h.request(a.key, "/subscriptions?limit=200")).body) as { data: Array<{ id: string }> };
    expect(subscriptions.data.map((row) => row.id)).not.toContain(b.subscriptionId);
    const foreignFilter = await h.request(a.key, `/orders?subscription_id=${b.subscriptionId}`);
    const unknownFilter = await h.request(a.key, "/orders?subscription_id=sub_doesnotexist000000000000");
    expect(foreignFilter.statusCode).toBe(unknownFilter.statusCode);
    if (foreignFilter.statusCode === 200) expect(JSON.parse(foreignFilter.body).data).toEqual([]);
    expect(foreignFilter.body).not.toContain(b.orderId);
  });

  it("REST: a cursor made for A's key is refused for B's key", async () => {
    await h.fixtures.subscription({ merchantId: a.merchantId });
    const page = JSON.parse((await h.request(a.key, "/subscriptions?limit=1")).body) as { next_cursor: string };
    const bKey = (await h.createKey(b.merchantId)).key;
    const response = await h.request(bKey, `/subscriptions?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body).code).toBe("invalid_cursor");
  });

  it("query RPCs: A's merchant_id with B's ids finds nothing", async () => {
    expect(await rpcCode(h.query.subscriptions.getSubscription({ merchantId: a.merchantId, subscriptionId: b.subscriptionId }))).toBe(Code.NotFound);
    const orders = await h.query.orders.listOrders({ merchantId: a.merchantId, subscriptionId: b.subscriptionId, pageSize: 50 });
    expect(orders.orders.map((order) => order.id)).not.toContain(b.orderId);
  });

  it("auth RPCs: A cannot revoke or read the audit trail of B's key", async () => {
    expect(await rpcCode(h.auth.apiKeys.revokeApiKey({ merchantId: a.merchantId, apiKeyId: b.apiKeyId }))).toBe(Code.NotFound);
    const keys = await h.auth.apiKeys.listApiKeys({ merchantId: a.merchantId, pageSize: 100 });
    expect(keys.apiKeys.map((key) => key.id)).not.toContain(b.apiKeyId);
    const audit = await h.auth.audit.listAuditEvents({ merchantId: a.merchantId, apiKeyId: b.apiKeyId, pageSize: 100 });
    expect(audit.auditEvents ?? []).toEqual([]);
  });

  it("webhook RPCs: every endpoint and delivery call with A's merchant_id and B's endpoint is NOT_FOUND or empty", async () => {
    const scope = { merchantId: a.merchantId, endpointId: b.endpointId };
    expect(await rpcCode(webhook.endpoints.getEndpoint(scope))).toBe(Code.NotFound);
    expect(
      await rpcCode(
        webhook.endpoints.updateEndpoint({
          merchantId: a.merchantId,
          endpoint: { id: b.endpointId, description: "x" },
          updateMask: { paths: ["description"] },
        }),
      ),
    ).toBe(Code.NotFound);
    expect(await rpcCode(webhook.endpoints.rotateSecret(scope))).toBe(Code.NotFound);
    expect(await rpcCode(webhook.endpoints.sendTestEvent(scope))).toBe(Code.NotFound);
    expect(await rpcCode(webhook.endpoints.deleteEndpoint(scope))).toBe(Code.NotFound);
    expect(await rpcCode(webhook.deliveries.resendEvent({ ...scope, eventId: "evt_doesnotexist" }))).toBe(Code.NotFound);
    expect(
      await rpcCode(webhook.deliveries.replayEvents({ ...scope, startTime: timestampFromMs(Date.now() - 3_600_000), endTime: timestampFromMs(Date.now()) })),
    ).toBe(Code.NotFound);
    const deliveries = await rpcCode(webhook.deliveries.listDeliveries({ ...scope, pageSize: 10 }));
    expect([Code.NotFound, "ok"]).toContain(deliveries);
    if (deliveries === "ok") expect((await webhook.deliveries.listDeliveries({ ...scope, pageSize: 10 })).deliveries).toEqual([]);
    const listed = await webhook.endpoints.listEndpoints({ merchantId: a.merchantId, pageSize: 100 });
    expect(listed.endpoints.map((endpoint) => endpoint.id)).not.toContain(b.endpointId);
    // B's endpoint is untouched.
    const still = await webhook.endpoints.getEndpoint({ merchantId: b.merchantId, endpointId: b.endpointId });
    expect(still.endpoint!.description).not.toBe("x");
  });
});
