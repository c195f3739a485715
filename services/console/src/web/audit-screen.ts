import { Readable } from "node:stream";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { AuditEvent } from "@subdata/proto/subdata/audit/v1/audit_event_pb";
import { MAX_PAGE_SIZE } from "@subdata/runtime";
import type { ListAuditEventsRequest } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleWebDeps } from "./console-context.ts";
import { html } from "./html.ts";
import { notice, page, when } from "./layout.ts";
import { FormError } from "./page-error.ts";
import { pager, queryText, sendPage, sessionOf, timeText, utcInstant } from "./screen-support.ts";

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

const STATUS_FILTERS: Array<{ value: string; label: string; min: number; max: number }> = [
  { value: "", label: "Any status", min: 0, max: 0 },
  { value: "2xx", label: "2xx: success", min: 200, max: 299 },
  { value: "3xx", label: "3xx: not modified", min: 300, max: 399 },
  { value: "4xx", label: "4xx: refused", min: 400, max: 499 },
  { value: "5xx", label: "5xx: failed", min: 500, max: 599 },
  { value: "errors", label: "Any error (4xx, 5xx)", min: 400, max: 599 },
];
const MAX_ROUTE_LENGTH = 200;

type AuditFilterFields = Pick<ListAuditEventsRequest, "apiKeyId" | "route" | "minStatus" | "maxStatus" | "startTime" | "endTime">;

/** The filters as typed in the address (what the form shows again), and what they ask of ListAuditEvents. */
interface AuditFilter {
  key: string;
  route: string;
  status: string;
  from: string;
  until: string;
  /** The set filters only, for links (pager, export, a route). */
  params: URLSearchParams;
  /** What is wrong with them, in words; the list is not read then. */
  error?: string;
  fields: AuditFilterFields;
}

function auditFilterOf(request: FastifyRequest): AuditFilter {
  const key = queryText(request, "key");
  const route = queryText(request, "route").trim();
  const status = queryText(request, "status");
  const from = queryText(request, "from");
  const until = queryText(request, "until");
  const params = new URLSearchParams();
  for (const [name, value] of [
    ["key", key],
    ["route", route],
    ["status", status],
    ["from", from],
    ["until", until],
  ] as const) {
    if (value !== "") params.set(name, value);
  }
  const filter: AuditFilter = { key, route, status, from, until, params, fields: { apiKeyId: key, route, minStatus: 0, maxStatus: 0 } };
  try {
    const statusFilter = STATUS_FILTERS.find((item) => item.value === status);
    if (!statusFilter) throw new FormError("Status: choose one from the list.");
    if (route.length > MAX_ROUTE_LENGTH || (route !== "" && !route.startsWith("/"))) {
      throw new FormError("Route: enter a route as the table shows it, starting with /, e.g. /v1/subscriptions/{id}.");
    }
    const start = from === "" ? undefined : utcInstant(from, "From");
    const end = until === "" ? undefined : utcInstant(until, "Until");
    if (start !== undefined && end !== undefined && end <= start) throw new FormError("Until must be after From.");
    filter.fields = {
      apiKeyId: key,
      route,
      minStatus: statusFilter.min,
      maxStatus: statusFilter.max,
      startTime: start === undefined ? undefined : timestampFromMs(start),
      endTime: end === undefined ? undefined : timestampFromMs(end),
    };
  } catch (error) {
    if (!(error instanceof FormError)) throw error;
    filter.error = error.message;
  }
  return filter;
}

/** The address of the list with these filters (and one changed, when given). */
function auditHref(params: URLSearchParams, change?: [string, string]): string {
  const next = new URLSearchParams(params);
  next.delete("page");
  if (change) next.set(change[0], change[1]);
  const query = next.toString();
  return `/console/audit${query ? `?${query}` : ""}`;
}

export function createAuditScreen(deps: ConsoleWebDeps) {
  const call = { timeoutMs: deps.upstreamTimeoutMs };

  return {
    async list(request: FastifyRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const merchantId = context.session.merchant_id;
      const filter = auditFilterOf(request);
      const pageToken = queryText(request, "page");
      const [events, keys, changes] = await Promise.all([
        filter.error ? undefined : deps.clients.audit.listAuditEvents({ merchantId, ...filter.fields, pageSize: 50, pageToken }, call),
        deps.clients.apiKeys.listApiKeys({ merchantId, pageSize: 200 }, call),
        deps.changes.recent(merchantId, 20),
      ]);
      const rows = (events?.auditEvents ?? []).map(
        (event) => html`<tr>
<td>${when(timeText(event.occurredAt))}</td>
<td><code>${event.apiKeyId}</code></td>
<td>${event.method} <a class="mono" href="${auditHref(filter.params, ["route", event.route])}" title="Only ${event.route}">${event.route}</a>${
          event.query ? html`<div class="hint mono">${event.query}</div>` : ""
        }</td>
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
      const filtered = filter.params.size > 0;
      const exportQuery = filter.params.toString();
      const table = filter.error
        ? ""
        : rows.length
          ? html`<div class="table-wrap"><table>
<caption class="hint">API reads${filtered ? " matching the filters" : ""}, oldest first.</caption>
<thead><tr><th scope="col">When</th><th scope="col">Key</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Results</th><th scope="col">Latency</th><th scope="col">Client</th></tr></thead>
<tbody>${rows}</tbody></table></div>${pager("/console/audit", filter.params, events?.nextPageToken ?? "", pageToken === "")}`
          : html`<p>No reads recorded${filtered ? " that match the filters" : ""}.</p>`;
      return sendPage(
        reply,
        filter.error ? 400 : 200,
        page({
          title: "Audit log",
          screen: "audit",
          context,
          body: html`<p>Every read made with your API keys, oldest first. Times are in UTC.</p>
${filter.error ? notice("error", filter.error) : ""}
<form method="get" action="/console/audit" class="card filters" aria-labelledby="audit-filter-title">
<h2 id="audit-filter-title">Filter</h2>
<div class="filter-grid">
<div><label for="audit-key">API key</label>
<select id="audit-key" name="key"><option value="">All keys</option>${keys.apiKeys.map(
            (key) =>
              html`<option value="${key.id}"${key.id === filter.key ? " selected" : ""}>${key.name || key.displayPrefix} (${key.displayPrefix}…)</option>`,
          )}</select></div>
<div><label for="audit-route">Route</label>
<input id="audit-route" name="route" type="text" maxlength="${MAX_ROUTE_LENGTH}" value="${filter.route}" aria-describedby="audit-route-hint" spellcheck="false">
<p id="audit-route-hint" class="hint">As the table shows it, e.g. <span class="mono">/v1/subscriptions/{id}</span>; empty for all.</p></div>
<div><label for="audit-status">Status</label>
<select id="audit-status" name="status">${STATUS_FILTERS.map((item) => html`<option value="${item.value}"${item.value === filter.status ? " selected" : ""}>${item.label}</option>`)}</select></div>
<div><label for="audit-from">From (UTC)</label>
<input id="audit-from" name="from" type="datetime-local" value="${filter.from}"></div>
<div><label for="audit-until">Until (UTC)</label>
<input id="audit-until" name="until" type="datetime-local" value="${filter.until}"></div>
</div>
<div class="actions"><button type="submit" class="secondary">Filter</button>${filtered ? html` <a href="/console/audit">Clear filters</a>` : ""}
${filter.error ? "" : html`<a href="/console/audit.csv${exportQuery ? `?${exportQuery}` : ""}" download>Export as CSV${filtered ? " (filtered)" : ""}</a>`}</div>
</form>
${table}
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
      const filter = auditFilterOf(request);
      if (filter.error) throw new FormError(filter.error);
      const read = (pageToken: string) => deps.clients.audit.listAuditEvents({ merchantId, ...filter.fields, pageSize: MAX_PAGE_SIZE, pageToken }, call);
      // The first page is read before anything is sent, so a failing upstream still shows an error page.
      // The rest streams, page by page, however many rows match: an upstream failure after that ends the
      // response without its final chunk, so the download fails visibly instead of arriving cut short.
      const first = await read("");
      async function* rows(): AsyncGenerator<string> {
        yield `${CSV_COLUMNS.join(",")}\r\n`;
        let events = first;
        for (;;) {
          if (events.auditEvents.length > 0) yield `${events.auditEvents.map(csvRow).join("\r\n")}\r\n`;
          if (events.nextPageToken === "") return;
          events = await read(events.nextPageToken);
        }
      }
      return reply
        .code(200)
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="audit-${merchantId}${filter.params.size > 0 ? "-filtered" : ""}.csv"`)
        .send(Readable.from(rows()));
    },
  };
}
