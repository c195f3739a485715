import type { AuditEvent } from "@subdata/proto/subdata/audit/v1/audit_event_pb";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleWebDeps } from "./console-context.ts";
import { html } from "./html.ts";
import { page, when } from "./layout.ts";
import { pager, queryText, sendPage, sessionOf, timeText } from "./screen-support.ts";

/** The most rows one CSV export carries; the CLI's `audit export` is for whole months. */
const CSV_MAX_ROWS = 10_000;
const CSV_COLUMNS = [
  "id",
  "occurred_at",
  "api_key_id",
  "request_id",
  "method",
  "route",
  "query",
  "status",
  "result_count",
  "latency_ms",
  "client_ip",
  "user_agent",
];

/** One CSV field (RFC 4180), with spreadsheet formulas defused. */
function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

function latencyMs(event: AuditEvent): string {
  return event.latency ? (Number(event.latency.seconds) * 1000 + event.latency.nanos / 1e6).toFixed(1) : "";
}

function csvRow(event: AuditEvent): string {
  return [
    event.id,
    timeText(event.occurredAt) ?? "",
    event.apiKeyId,
    event.requestId,
    event.method,
    event.route,
    event.query,
    String(event.status),
    String(event.resultCount),
    latencyMs(event),
    event.clientIp,
    event.userAgent,
  ]
    .map(csvField)
    .join(",");
}

export function createAuditScreen(deps: ConsoleWebDeps) {
  const call = { timeoutMs: deps.upstreamTimeoutMs };

  return {
    async list(request: FastifyRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const merchantId = context.session.merchant_id;
      const apiKeyId = queryText(request, "key");
      const pageToken = queryText(request, "page");
      const [events, keys, changes] = await Promise.all([
        deps.clients.audit.listAuditEvents({ merchantId, apiKeyId, pageSize: 50, pageToken }, call),
        deps.clients.apiKeys.listApiKeys({ merchantId, pageSize: 200 }, call),
        deps.changes.recent(merchantId, 20),
      ]);
      const filter = new URLSearchParams(apiKeyId ? { key: apiKeyId } : {});
      const rows = events.auditEvents.map(
        (event) => html`<tr>
<td>${when(timeText(event.occurredAt))}</td>
<td><code>${event.apiKeyId}</code></td>
<td>${event.method} <span class="mono">${event.route}</span>${event.query ? html`<div class="hint mono">${event.query}</div>` : ""}</td>
<td>${event.status}</td>
<td>${event.resultCount}</td>
<td>${latencyMs(event)} ms</td>
<td class="mono">${event.clientIp}</td>
</tr>`,
      );
      const changeRows = changes.map(
        (change) => html`<tr>
<td>${when(change.created_at)}</td>
<td>${change.user_name || change.user_id}<div class="hint mono">${change.user_id}</div></td>
<td class="mono">${change.action}</td>
<td class="mono">${change.target_id ?? ""}</td>
<td class="status-${change.status}">${change.status}${change.detail ? html`<div class="hint">${change.detail}</div>` : ""}</td>
</tr>`,
      );
      const filterQuery = filter.toString();
      return sendPage(
        reply,
        200,
        page({
          title: "Audit log",
          screen: "audit",
          context,
          body: html`<p>Every read made with your API keys, oldest first.</p>
<form method="get" action="/console/audit" class="actions">
<div><label for="audit-key">API key</label>
<select id="audit-key" name="key"><option value="">All keys</option>${keys.apiKeys.map(
            (key) => html`<option value="${key.id}"${key.id === apiKeyId ? " selected" : ""}>${key.name || key.displayPrefix} (${key.displayPrefix}…)</option>`,
          )}</select></div>
<div><button type="submit" class="secondary">Filter</button></div>
<div><a href="/console/audit.csv${filterQuery ? `?${filterQuery}` : ""}" download>Export as CSV</a></div>
</form>
${
  rows.length
    ? html`<div class="table-wrap"><table>
<caption class="hint">API reads${apiKeyId ? ` with ${apiKeyId}` : ""}.</caption>
<thead><tr><th scope="col">When</th><th scope="col">Key</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Results</th><th scope="col">Latency</th><th scope="col">Client</th></tr></thead>
<tbody>${rows}</tbody></table></div>${pager("/console/audit", filter, events.nextPageToken, pageToken === "")}`
    : html`<p>No reads recorded${apiKeyId ? " for this key" : ""}.</p>`
}
<h2>Changes made in this page</h2>
${
  changeRows.length
    ? html`<div class="table-wrap"><table>
<caption class="hint">The latest 20, newest first, with the user your app named.</caption>
<thead><tr><th scope="col">When</th><th scope="col">User</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Outcome</th></tr></thead>
<tbody>${changeRows}</tbody></table></div>`
    : html`<p>No changes yet.</p>`
}`,
        }),
      );
    },

    async exportCsv(request: FastifyRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const merchantId = context.session.merchant_id;
      const apiKeyId = queryText(request, "key");
      const lines = [CSV_COLUMNS.join(",")];
      let pageToken = "";
      // Pages are read before anything is sent, so a failing upstream still shows an error page.
      do {
        const events = await deps.clients.audit.listAuditEvents({ merchantId, apiKeyId, pageSize: 200, pageToken }, call);
        for (const event of events.auditEvents) lines.push(csvRow(event));
        pageToken = events.nextPageToken;
      } while (pageToken !== "" && lines.length <= CSV_MAX_ROWS);
      return reply
        .code(200)
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="audit-${merchantId}${apiKeyId ? `-${apiKeyId}` : ""}.csv"`)
        .send(`${lines.slice(0, CSV_MAX_ROWS + 1).join("\r\n")}\r\n`);
    },
  };
}
