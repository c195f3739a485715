import type { ServedResponse } from "./api-load.ts";
import type { FaultStack } from "./stack.ts";
import { outboxIds, recordedFailures, type EndpointReceiver, type Tenant } from "./tenant.ts";

/** One line of the suite's table. */
export interface ScenarioFigures {
  scenario: string;
  /** Outbox rows × endpoints: the deliveries owed. */
  produced: number;
  /** Distinct (webhook-id, endpoint) answered 2xx. */
  delivered: number;
  /** 2xx receipts beyond the first of the same webhook-id. */
  duplicates: number;
  /** Owed deliveries durably accounted for without a 2xx: FAILED/CANCELLED, or held for a disabled endpoint. */
  recordedFailed: number;
  lost: number;
  /** 200 responses served. */
  requests: number;
  /** audit_events rows for the scenario's key. */
  audited: number;
  /** 200s with no audit row. */
  unaudited: number;
  /** Non-200 responses that carried data. */
  leaked: number;
}

async function lostPairs(stack: FaultStack, tenant: Tenant, receivers: EndpointReceiver[]): Promise<{ produced: number; lost: string[]; recorded: number }> {
  const ids = await outboxIds(stack, tenant.merchantId);
  const recorded = await recordedFailures(stack, tenant.merchantId);
  const lost: string[] = [];
  let recordedCount = 0;
  for (const { endpointId, receiver } of receivers) {
    const delivered = receiver.deliveredIds();
    for (const id of ids) {
      if (delivered.has(id)) continue;
      if (recorded.has(`${id}|${endpointId}`)) recordedCount++;
      else lost.push(`${id}→${endpointId}`);
    }
  }
  return { produced: ids.length * receivers.length, lost, recorded: recordedCount };
}

/** Waits (bounded) until every owed delivery is delivered or durably failed; resolves with what is missing at the end. */
export async function settle(stack: FaultStack, tenant: Tenant, receivers: EndpointReceiver[], timeoutMs = 90_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { lost } = await lostPairs(stack, tenant, receivers);
    if (lost.length === 0 || Date.now() > deadline) return lost;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * The first 2xx receipt of each event, per subscription, must come in version order: event n+1 is
 * not sent before n succeeded (or was given up on). Returns the subscriptions that broke it.
 */
export function outOfOrder(receivers: EndpointReceiver[]): string[] {
  const broken: string[] = [];
  for (const { receiver } of receivers) {
    const seen = new Set<string>();
    const last = new Map<string, number>();
    for (const receipt of receiver.receipts) {
      if (typeof receipt.answered !== "number" || receipt.answered < 200 || receipt.answered >= 300 || seen.has(receipt.webhookId)) continue;
      seen.add(receipt.webhookId);
      const previous = last.get(receipt.subscriptionId) ?? 0;
      if (receipt.version < previous) broken.push(`${receipt.subscriptionId}: v${receipt.version} after v${previous}`);
      last.set(receipt.subscriptionId, Math.max(previous, receipt.version));
    }
  }
  return broken;
}

export async function figures(
  stack: FaultStack,
  scenario: string,
  tenant: Tenant,
  receivers: EndpointReceiver[],
  responses: readonly ServedResponse[],
): Promise<ScenarioFigures> {
  const { produced, lost, recorded } = await lostPairs(stack, tenant, receivers);
  const audit = await stack.admin.query<{ request_id: string }>("SELECT request_id FROM audit_events WHERE api_key_id = $1", [tenant.apiKeyId]);
  const auditedIds = new Set(audit.rows.map((row) => row.request_id));
  const served = responses.filter((response) => response.status === 200);
  return {
    scenario,
    produced,
    delivered: receivers.reduce((sum, { receiver }) => sum + receiver.deliveredIds().size, 0),
    duplicates: receivers.reduce((sum, { receiver }) => sum + receiver.duplicates(), 0),
    recordedFailed: recorded,
    lost: lost.length,
    requests: served.length,
    audited: audit.rowCount ?? 0,
    unaudited: served.filter((response) => !auditedIds.has(response.requestId)).length,
    leaked: responses.filter((response) => response.leakedData).length,
  };
}

export function renderTable(rows: readonly ScenarioFigures[]): string {
  const header = [
    "scenario",
    "events produced",
    "delivered",
    "duplicates",
    "failed/held (recorded)",
    "lost",
    "requests (200)",
    "audited",
    "unaudited",
    "non-200 with data",
  ];
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const row of rows) {
    lines.push(
      `| ${[row.scenario, row.produced, row.delivered, row.duplicates, row.recordedFailed, row.lost, row.requests, row.audited, row.unaudited, row.leaked].join(" | ")} |`,
    );
  }
  return lines.join("\n");
}
