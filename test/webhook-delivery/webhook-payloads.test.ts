import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { eventTypeNames } from "@subdata/events";
import { createOpenApiValidator } from "@subdata/gateway/test-support";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { createLogger, createServiceTransport } from "@subdata/runtime";
import { createWebhookServer } from "@subdata/webhook";
import { createCallerTokens } from "@subdata/runtime/test-support";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { startTestRelay } from "../relay/relay-harness.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { waitFor } from "./support/harness.ts";
import { webhookHeaders } from "./support/receiver.ts";

/**
 * The OpenAPI document's `webhooks` hold for what subdata really sends: every event type is caused by a
 * real change of its resource (rows written to Postgres → capture → relay → JetStream → ingest → a signed
 * POST), received by a local endpoint, verified, and validated against the entry for its type the way
 * the gateway's responses are validated against the paths.
 */
describe("webhook deliveries against the OpenAPI document's webhooks", () => {
  const h = useDeliveryHarness("webhook-payloads");
  const openapi = createOpenApiValidator();

  it("match the entry for their type, for all nine event types and the test event", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver();
    const endpoint = await h.createEndpoint({ merchantId, url: `${r.origin}/everything` });

    const pipeline = h.startPipeline();
    const relay = startTestRelay({
      databaseUrl: h.webhookDatabaseUrl,
      nc: h.nc,
      stream: { stream: h.stream, subjectPrefix: h.subjectPrefix, replicas: 1 },
      pollIntervalMs: 50,
    });
    const callers = createCallerTokens();
    const webhookServer = createWebhookServer({
      pool: h.pool,
      callers: callers.credentials,
      pageTokenSecret: randomBytes(32).toString("hex"),
      secretBox: h.secretBox,
      allowPrivate: true,
      logger: createLogger({ name: "webhook", level: "silent" }),
      pipeline,
    });
    const address = await webhookServer.listen("127.0.0.1", 0);
    const connection = createServiceTransport({ baseUrl: `http://127.0.0.1:${address.port}`, serviceToken: callers.tokens.app });
    try {
      relay.relay.start();
      const subscription = await h.fixtures.subscription({ merchantId, status: "TRIALING", trialEndsAt: "2026-12-01T00:00:00Z" });
      const chargeId = await h.fixtures.charge({ merchantId, subscriptionId: subscription.id, status: "PENDING", amountMinor: 2599 });
      await h.admin.query("UPDATE charges SET status = 'SUCCEEDED', processed_at = now() WHERE id = $1", [chargeId]);
      const order = await h.fixtures.order({ merchantId, subscriptionId: subscription.id, chargeId, lineItems: [{ sku: "BEANS-1KG", quantity: 2 }] });
      await h.admin.query("UPDATE orders SET status = 'FULFILLED' WHERE id = $1", [order.id]);
      // Money, a nested object and nullable times among the previous attributes.
      const plan = await h.fixtures.plan(merchantId, { priceMinor: 2499 });
      await h.admin.query("UPDATE subscriptions SET status = 'ACTIVE', plan_id = $2, price_minor = 2499, trial_ends_at = NULL WHERE id = $1", [
        subscription.id,
        plan,
      ]);
      await h.admin.query("DELETE FROM orders WHERE id = $1", [order.id]);
      await h.admin.query("DELETE FROM charges WHERE id = $1", [chargeId]);
      await h.admin.query("DELETE FROM subscriptions WHERE id = $1", [subscription.id]);
      await createClient(WebhookEndpointService, connection.transport).sendTestEvent({ merchantId, endpointId: endpoint.id });

      await waitFor("a delivery of every event type and the test event", () => r.requests.length === eventTypeNames.length + 1);

      const verifier = new Webhook(endpoint.secret);
      const validated: string[] = [];
      for (const request of r.requests) {
        verifier.verify(request.body, webhookHeaders(request));
        validated.push(openapi.validateWebhook(request));
      }
      expect(validated.sort()).toEqual([...eventTypeNames, "subscription.updated"].sort());

      const bodies = r.requests.map((request) => JSON.parse(request.body) as { type: string; test?: true; data: { previous_attributes: object } });
      const updated = bodies.find((body) => body.type === "subscription.updated" && !body.test)!;
      expect(Object.keys(updated.data.previous_attributes).sort()).toEqual(["plan", "price", "status", "trial_ends_at", "updated_at"]);
      expect(bodies.filter((body) => body.test)).toHaveLength(1);
    } finally {
      connection.close();
      await webhookServer.close();
      await relay.close();
    }
  });

  it("a body that strays from the document fails the check", () => {
    const headers = {
      "content-type": "application/json",
      "webhook-id": "evt_0123456789abcdef0123456789abcdef",
      "webhook-timestamp": "1795307580",
      "webhook-signature": "v1,IotixaLE3UTbutPsRXW8FTdotgMCQGIr4SatpIBxVDs=",
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01",
    };
    const created = (previous: object) =>
      JSON.stringify({
        id: "evt_0123456789abcdef0123456789abcdef",
        type: "charge.created",
        timestamp: "2026-11-22T00:00:04.530Z",
        data: {
          object: {
            id: "ch_1",
            object: "charge",
            subscription_id: "sub_1",
            status: "PENDING",
            amount: { amount: "25.99", currency: "USD" },
            amount_refunded: { amount: "0.00", currency: "USD" },
            order_id: null,
            failure_code: null,
            failure_message: null,
            scheduled_at: "2026-11-22T00:00:00.000Z",
            processed_at: null,
            created_at: "2026-11-21T23:59:58.104Z",
            version: 1,
          },
          previous_attributes: previous,
        },
      });
    expect(openapi.validateWebhook({ headers, body: created({}) })).toBe("charge.created");
    // A created event never carries previous attributes.
    expect(() => openapi.validateWebhook({ headers, body: created({ status: "PENDING" }) })).toThrow();
    expect(() => openapi.validateWebhook({ headers: { ...headers, traceparent: undefined }, body: created({}) })).toThrow();
  });
});
