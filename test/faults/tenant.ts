import type { FaultReceiver } from "./receiver.ts";
import type { FaultStack } from "./stack.ts";

/**
 * One scenario's world: a fresh merchant with subscriptions, an API key, and webhook endpoints
 * pointing at receivers (directly or through a fault proxy). Changes are made with the suite's
 * admin connection, as the app would: the trigger-fed outbox captures them.
 */
export interface Tenant {
  merchantId: string;
  subscriptionIds: string[];
  key: string;
  apiKeyId: string;
  endpointIds: string[];
}

export async function createTenant(stack: FaultStack, options: { subscriptions: number; endpointUrls: string[] }): Promise<Tenant> {
  const { admin } = stack;
  const merchantId = (await admin.query<{ id: string }>("INSERT INTO merchants (name) VALUES ('faults') RETURNING id")).rows[0]!.id;
  const customerId = (
    await admin.query<{ id: string }>("INSERT INTO customers (merchant_id, email, name) VALUES ($1, 'f@example.com', 'F') RETURNING id", [merchantId])
  ).rows[0]!.id;
  const planId = (
    await admin.query<{ id: string }>(
      "INSERT INTO plans (merchant_id, name, interval, interval_count, price_minor, currency) VALUES ($1, 'Box', 'MONTH', 1, 1999, 'USD') RETURNING id",
      [merchantId],
    )
  ).rows[0]!.id;
  // Endpoints first, so the subscriptions' creation events are delivered too.
  const endpointIds: string[] = [];
  for (const url of options.endpointUrls) {
    const created = await stack.endpoints.createEndpoint({ merchantId, url, description: "fault suite" });
    endpointIds.push(created.endpoint!.id);
  }
  const subscriptionIds: string[] = [];
  for (let index = 0; index < options.subscriptions; index++) {
    const result = await admin.query<{ id: string }>(
      `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
       VALUES ($1, $2, $3, 'ACTIVE', 1999, 'USD', now(), now() + interval '1 month') RETURNING id`,
      [merchantId, customerId, planId],
    );
    subscriptionIds.push(result.rows[0]!.id);
  }
  const created = await stack.apiKeys.createApiKey({ merchantId, name: "fault suite" });
  return { merchantId, subscriptionIds, key: created.key, apiKeyId: created.apiKey!.id, endpointIds };
}

/**
 * `count` subscription changes spread round-robin over the tenant's subscriptions. A change whose
 * statement fails (Postgres restarting) is retried: what was produced is counted from the outbox,
 * so a commit whose outcome the client never learnt is still accounted for.
 */
export async function produceChanges(
  stack: FaultStack,
  tenant: Tenant,
  count: number,
  options: { onProgress?: (done: number) => Promise<void> | void } = {},
): Promise<void> {
  for (let done = 0; done < count; ) {
    const subscriptionId = tenant.subscriptionIds[done % tenant.subscriptionIds.length]!;
    try {
      await stack.admin.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1 AND merchant_id = $2", [subscriptionId, tenant.merchantId]);
      done++;
      await options.onProgress?.(done);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export async function outboxIds(stack: FaultStack, merchantId: string): Promise<string[]> {
  const result = await stack.admin.query<{ id: string }>("SELECT id FROM event_outbox WHERE merchant_id = $1", [merchantId]);
  return result.rows.map((row) => row.id);
}

/**
 * (event, endpoint) pairs that are durably accounted for without a 2xx: a delivery FAILED or
 * CANCELLED, or an event stored (webhook_events, replayable) while its endpoint is disabled (a
 * disabled endpoint is owed no new deliveries; ReplayEvents sends them once it is enabled again).
 */
export async function recordedFailures(stack: FaultStack, merchantId: string): Promise<Set<string>> {
  const result = await stack.admin.query<{ event_id: string; endpoint_id: string }>(
    `SELECT d.event_id, d.endpoint_id FROM webhook_deliveries d
      WHERE d.merchant_id = $1 AND d.status IN ('FAILED', 'CANCELLED')
     UNION
     SELECT e.id, w.id FROM webhook_events e JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id
      WHERE e.merchant_id = $1 AND w.status = 'DISABLED'
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = w.id AND d.event_id = e.id AND d.status = 'SUCCEEDED')`,
    [merchantId],
  );
  return new Set(result.rows.map((row) => `${row.event_id}|${row.endpoint_id}`));
}

export interface EndpointReceiver {
  endpointId: string;
  receiver: FaultReceiver;
}

/**
 * `count` changes of the tenant's subscriptions, one every `spacingMs`, each timed from its commit to
 * the first 2xx-bound request its (single) receiver got for that subscription version: the change →
 * delivery latencies in milliseconds, once every change arrived (bounded wait).
 */
export async function measureChangeLatencies(stack: FaultStack, tenant: Tenant, receiver: FaultReceiver, count: number, spacingMs = 40): Promise<number[]> {
  const committed = new Map<string, number>();
  for (let done = 0; done < count; done++) {
    const subscriptionId = tenant.subscriptionIds[done % tenant.subscriptionIds.length]!;
    const { rows } = await stack.admin.query<{ version: string }>(
      "UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1 AND merchant_id = $2 RETURNING version::text",
      [subscriptionId, tenant.merchantId],
    );
    committed.set(`${subscriptionId}@${rows[0]!.version}`, Date.now());
    await new Promise((resolve) => setTimeout(resolve, spacingMs));
  }
  const arrived = () => {
    const first = new Map<string, number>();
    for (const receipt of receiver.receipts) {
      const key = `${receipt.subscriptionId}@${receipt.version}`;
      if (committed.has(key) && !first.has(key)) first.set(key, receipt.at);
    }
    return first;
  };
  const deadline = Date.now() + 60_000;
  while (arrived().size < committed.size && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  const first = arrived();
  return [...committed].flatMap(([key, at]) => (first.has(key) ? [first.get(key)! - at] : []));
}
