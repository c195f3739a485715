import { readFileSync } from "node:fs";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { migrationsDir } from "../../services/db/src/migrate.ts";
import { startTestRelay } from "../relay/relay-harness.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { startQueryServer } from "../support/query-server.ts";
import { waitFor } from "./support/harness.ts";
import { type ReceivedRequest, webhookHeaders } from "./support/receiver.ts";

/**
 * The whole change path for every resource: rows written to Postgres → change_events and the outbox →
 * the relay → JetStream → ingest → signed POSTs, with the feed (EventService.ListEvents) read beside it.
 */
describe("charge and order events as webhooks", () => {
  const h = useDeliveryHarness("change-events");

  /** Runs the Up part of a migration again, on endpoints made since the harness's database was migrated. */
  async function rerunMigration(name: string): Promise<void> {
    const text = readFileSync(path.join(migrationsDir, `${name}.sql`), "utf8");
    await h.admin.query(text.slice(text.indexOf("-- Up Migration"), text.indexOf("-- Down Migration")));
  }

  it("reach the endpoints that asked for them, signed, with bodies byte-equal to the feed's items", async () => {
    const merchantId = await h.fixtures.merchant();
    const r = await h.receiver();
    // Registered while an empty list meant "every subscription event", then migrated.
    const legacy = await h.createEndpoint({ merchantId, url: `${r.origin}/legacy` });
    await rerunMigration("20261126000400000_endpoint_event_types");
    const everything = await h.createEndpoint({ merchantId, url: `${r.origin}/everything` });
    const billing = await h.createEndpoint({ merchantId, url: `${r.origin}/billing`, eventTypes: ["charge.created", "charge.updated", "order.created"] });
    const subscriptionsOnly = await h.createEndpoint({
      merchantId,
      url: `${r.origin}/subscriptions`,
      eventTypes: ["subscription.created", "subscription.updated", "subscription.deleted"],
    });
    const secrets = new Map([
      ["/legacy", legacy.secret],
      ["/everything", everything.secret],
      ["/billing", billing.secret],
      ["/subscriptions", subscriptionsOnly.secret],
    ]);

    h.startPipeline();
    const relay = startTestRelay({
      databaseUrl: h.webhookDatabaseUrl,
      nc: h.nc,
      stream: { stream: h.stream, subjectPrefix: h.subjectPrefix, replicas: 1 },
      pollIntervalMs: 50,
    });
    const query = await startQueryServer({ databaseUrl: h.queryDatabaseUrl });
    try {
      relay.relay.start();
      const subscription = await h.fixtures.subscription({ merchantId });
      const chargeId = await h.fixtures.charge({ merchantId, subscriptionId: subscription.id, status: "PENDING", amountMinor: 2599 });
      await h.admin.query("UPDATE charges SET status = 'SUCCEEDED', processed_at = '2026-11-20 10:00:00.123456+00' WHERE id = $1", [chargeId]);
      const order = await h.fixtures.order({
        merchantId,
        subscriptionId: subscription.id,
        chargeId,
        lineItems: [
          { sku: "BEANS-1KG", title: "Beans, 1 kg", quantity: 2, unitPriceMinor: 1100 },
          { sku: "FILTERS", title: "Filters", quantity: 1, unitPriceMinor: 399 },
        ],
      });
      // A line item changes: its order is touched (order.updated), carrying the items as they are now.
      await h.admin.query("UPDATE order_line_items SET quantity = 3, total_minor = 3300 WHERE order_id = $1 AND position = 1", [order.id]);

      const byPath = (requests: ReceivedRequest[], route: string) => requests.filter((request) => request.url === route);
      await waitFor("every delivery", () => byPath(r.requests, "/everything").length === 5 && byPath(r.requests, "/billing").length === 3);
      await waitFor(
        "the subscription endpoints' deliveries",
        () => byPath(r.requests, "/legacy").length === 1 && byPath(r.requests, "/subscriptions").length === 1,
      );

      // Every request verifies with its endpoint's secret (Standard Webhooks), and webhook-id is the event id.
      const bodies = new Map<string, string>();
      for (const request of r.requests) {
        const payload = new Webhook(secrets.get(request.url)!).verify(request.body, webhookHeaders(request)) as { id: string };
        expect(payload.id).toBe(request.headers["webhook-id"]);
        bodies.set(payload.id, request.body);
      }
      const typesAt = (route: string) => byPath(r.requests, route).map((request) => (JSON.parse(request.body) as { type: string }).type);
      expect(typesAt("/everything").sort()).toEqual(["charge.created", "charge.updated", "order.created", "order.updated", "subscription.created"]);
      expect(typesAt("/billing").sort()).toEqual(["charge.created", "charge.updated", "order.created"]);
      expect(typesAt("/subscriptions")).toEqual(["subscription.created"]);
      expect(typesAt("/legacy")).toEqual(["subscription.created"]);
      // A charge's versions in order for each endpoint.
      expect(typesAt("/billing").filter((type) => type.startsWith("charge."))).toEqual(["charge.created", "charge.updated"]);

      const charge = JSON.parse(byPath(r.requests, "/billing").find((request) => request.body.includes('"charge.updated"'))!.body);
      expect(charge.data.object).toMatchObject({
        id: chargeId,
        object: "charge",
        status: "SUCCEEDED",
        amount: { amount: "25.99", currency: "USD" },
        processed_at: "2026-11-20T10:00:00.123Z",
        version: 2,
      });
      // version is the event's own and never listed as changed.
      expect(charge.data.previous_attributes).toEqual({ status: "PENDING", processed_at: null });
      const orderBody = JSON.parse(byPath(r.requests, "/billing").find((request) => request.body.includes('"order.created"'))!.body);
      expect(orderBody).toMatchObject({ type: "order.created", data: { previous_attributes: {} } });
      expect(orderBody.data.object).toMatchObject({
        id: order.id,
        object: "order",
        charge_id: chargeId,
        line_items: [
          {
            sku: "BEANS-1KG",
            title: "Beans, 1 kg",
            quantity: 2,
            unit_price: { amount: "11.00", currency: "USD" },
            total: { amount: "22.00", currency: "USD" },
          },
          { sku: "FILTERS", quantity: 1, total: { amount: "3.99", currency: "USD" } },
        ],
        total: { amount: "25.99", currency: "USD" },
      });

      const orderUpdated = JSON.parse(byPath(r.requests, "/everything").find((request) => request.body.includes('"order.updated"'))!.body);
      expect(orderUpdated.data.object.line_items[0]).toMatchObject({ sku: "BEANS-1KG", quantity: 3, total: { amount: "33.00", currency: "USD" } });
      expect(orderUpdated.data.object.version).toBe(2);
      expect(Object.keys(orderUpdated.data.previous_attributes)).toEqual(["updated_at"]);

      // The feed serves each of these events as exactly the bytes its webhooks carried.
      const page = await query.events.listEvents({ merchantId, pageSize: 100, renderPublicJson: true });
      expect(page.publicIds).toHaveLength(5);
      expect(new Set(page.publicIds)).toEqual(new Set(bodies.keys()));
      const feedText = new TextDecoder().decode(page.publicJson);
      expect(feedText).toBe(`[${page.publicIds.map((id) => bodies.get(id)).join(",")}]`);
    } finally {
      await query.stop();
      await relay.close();
    }
  });
});
