import type { AuditEvent } from "@subdata/proto/subdata/audit/v1/audit_event_pb";
import type { RegisterCommands } from "../cli-context.ts";
import { parseWholeNumber } from "../option-parsers.ts";
import { timeText, withAuthService } from "./keys.ts";

const MAX_LIMIT = 10_000;

function auditEventJson(event: AuditEvent) {
  return {
    id: event.id,
    occurred_at: timeText(event.occurredAt),
    merchant_id: event.merchantId,
    api_key_id: event.apiKeyId,
    request_id: event.requestId,
    method: event.method,
    route: event.route,
    query: event.query,
    resource_ids: event.resourceIds,
    result_count: event.resultCount,
    status: event.status,
    client_ip: event.clientIp,
    user_agent: event.userAgent,
    latency_ms: event.latency ? Number(event.latency.seconds) * 1_000 + event.latency.nanos / 1_000_000 : 0,
  };
}

/** `subdata audit list`: a merchant's audit log of public API reads, oldest first. */
export const registerAuditCommands: RegisterCommands = (program, context) => {
  const audit = program.command("audit").description("read the audit log of public API reads");
  audit
    .command("list")
    .description("list a merchant's audit events, oldest first")
    .requiredOption("--merchant <id>", "mer_…")
    .option("--key <key-id>", "only the events of this API key (key_…)")
    .option("--limit <n>", `how many events at most (1–${MAX_LIMIT})`, "50")
    .action(async (options: { merchant: string; key?: string; limit: string }) => {
      const limit = parseWholeNumber(options.limit, "--limit", { min: 1, max: MAX_LIMIT });
      const { events, more } = await withAuthService(context, async (clients) => {
        const found: AuditEvent[] = [];
        let pageToken = "";
        do {
          const page = await clients.audit.listAuditEvents({
            merchantId: options.merchant,
            apiKeyId: options.key ?? "",
            pageSize: Math.min(200, limit - found.length),
            pageToken,
          });
          found.push(...page.auditEvents);
          pageToken = page.nextPageToken;
        } while (pageToken !== "" && found.length < limit);
        return { events: found, more: pageToken !== "" };
      });
      const lines = events.map(
        (event) =>
          `${timeText(event.occurredAt)}  ${event.apiKeyId}  ${event.status}  ${event.method} ${event.route}${event.query ? `?${event.query}` : ""}` +
          `  ${event.resultCount} result(s)  ${event.clientIp}  ${event.requestId}`,
      );
      if (events.length === 0) lines.push(`no audit events for ${options.merchant}${options.key ? ` and ${options.key}` : ""}`);
      if (more) lines.push(`(more events follow; raise --limit to see them)`);
      context.output.result({ audit_events: events.map(auditEventJson), has_more: more }, lines.join("\n"));
    });
};
