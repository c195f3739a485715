import { eventTypeName, eventTypeNames, eventTypeOf } from "@subdata/events";
import type { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type Endpoint, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import type { FastifyReply, FastifyRequest } from "fastify";
import { repeatedChangeText, runChange } from "./change-runner.ts";
import type { ConsoleWebDeps, SessionContext } from "./console-context.ts";
import { html, type SafeHtml } from "./html.ts";
import { formGuard, notice, page, when } from "./layout.ts";
import { FormError } from "./page-error.ts";
import { formOf, pager, queryText, sendPage, sessionOf, shownOnce, timeText, tryForm } from "./screen-support.ts";

export interface EndpointFormValues {
  url: string;
  description: string;
  eventTypes: readonly string[];
  error?: string;
}

/** The event types ticked in a form; an unknown name is a FormError. */
export function eventTypesOf(form: URLSearchParams): EventType[] {
  return form.getAll("event_types").map((name) => {
    const type = eventTypeOf(name);
    if (type === undefined) throw new FormError(`"${name}" is not an event type.`);
    return type;
  });
}

export function eventTypesText(endpoint: Endpoint): string {
  return endpoint.eventTypes.length === 0 ? "All events" : endpoint.eventTypes.map((type) => eventTypeName(type) ?? String(type)).join(", ");
}

export function endpointStatusText(status: EndpointStatus): "enabled" | "disabled" {
  return status === EndpointStatus.DISABLED ? "disabled" : "enabled";
}

/** The event-type checkboxes: none ticked means every event type, now and later. */
export function eventTypeFieldset(idPrefix: string, chosen: readonly string[]): SafeHtml {
  return html`<fieldset aria-describedby="${idPrefix}-types-hint">
<legend>Event types</legend>
<p class="hint" id="${idPrefix}-types-hint">Tick none to receive every event type, including ones added later.</p>
${eventTypeNames.map(
  (name) =>
    html`<label for="${idPrefix}-${name}"><input type="checkbox" id="${idPrefix}-${name}" name="event_types" value="${name}"${chosen.includes(name) ? " checked" : ""}> ${name}</label>`,
)}
</fieldset>`;
}

function createForm(context: SessionContext, values: EndpointFormValues): SafeHtml {
  return html`<form method="post" action="/console/webhooks" class="card" novalidate>
<h2>Add an endpoint</h2>
${values.error ? html`<p class="field-error" id="endpoint-error" role="alert">${values.error}</p>` : ""}
${formGuard(context)}
<label for="endpoint-url">URL</label>
<p class="hint" id="endpoint-url-hint">Where subdata POSTs signed events: an https URL on the public internet.</p>
<input id="endpoint-url" name="url" type="url" required value="${values.url}" aria-describedby="endpoint-url-hint${values.error ? " endpoint-error" : ""}"${values.error ? html` aria-invalid="true"` : ""}>
<label for="endpoint-description">Description (optional)</label>
<input id="endpoint-description" name="description" type="text" maxlength="200" value="${values.description}">
${eventTypeFieldset("create", values.eventTypes)}
<div><button type="submit">Add endpoint</button></div>
</form>`;
}

export function createWebhooksScreen(deps: ConsoleWebDeps) {
  const call = { timeoutMs: deps.upstreamTimeoutMs };

  async function listPage(request: FastifyRequest, reply: FastifyReply, status: number, top: SafeHtml, values: EndpointFormValues) {
    const context = sessionOf(request);
    const pageToken = queryText(request, "page");
    const list = await deps.clients.endpoints.listEndpoints({ merchantId: context.session.merchant_id, pageSize: 50, pageToken }, call);
    const rows = list.endpoints.map((endpoint) => {
      const state = endpointStatusText(endpoint.status);
      return html`<tr>
<td><a href="/console/webhooks/${endpoint.id}" class="mono">${endpoint.url}</a>${endpoint.description ? html`<div class="hint">${endpoint.description}</div>` : ""}</td>
<td>${eventTypesText(endpoint)}</td>
<td class="status-${state}">${state}${endpoint.disabledReason ? html`<div class="hint">${endpoint.disabledReason}</div>` : ""}</td>
<td>${when(timeText(endpoint.createdAt))}</td>
</tr>`;
    });
    const table = rows.length
      ? html`<div class="table-wrap"><table>
<caption class="hint">Endpoints of ${context.session.merchant_id}, oldest first. Open one to see its deliveries.</caption>
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
<tbody>${rows}</tbody></table></div>${pager("/console/webhooks", new URLSearchParams(), list.nextPageToken, pageToken === "")}`
      : html`<p>No endpoints yet.</p>`;
    const done = queryText(request, "done") === "deleted" ? notice("ok", "The endpoint was deleted; its pending deliveries were cancelled.") : "";
    return sendPage(
      reply,
      status,
      page({
        title: "Webhooks",
        screen: "webhooks",
        context,
        body: html`${done}${top}
<p>subdata sends a signed <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> request to each endpoint whenever a subscription, charge or order changes.</p>
${createForm(context, values)}
<h2>Endpoints</h2>
${table}`,
      }),
    );
  }

  return {
    async list(request: FastifyRequest, reply: FastifyReply) {
      return listPage(request, reply, 200, html``, { url: "", description: "", eventTypes: [] });
    },

    async create(request: FastifyRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const form = formOf(request);
      const values = { url: (form.get("url") ?? "").trim(), description: (form.get("description") ?? "").trim(), eventTypes: form.getAll("event_types") };
      if (values.url === "") return listPage(request, reply, 400, html``, { ...values, error: "Enter the URL subdata should send events to." });
      const outcome = await tryForm(() =>
        runChange(deps.changes, context, { action: "webhook_endpoint.create", targetId: null, idempotencyKey: form.get("_idem") }, async () => {
          // The webhook service checks the URL (scheme, and where it resolves: no private addresses).
          const created = await deps.clients.endpoints.createEndpoint(
            { merchantId: context.session.merchant_id, url: values.url, description: values.description, eventTypes: eventTypesOf(form) },
            call,
          );
          return { value: created, targetId: created.endpoint?.id ?? null };
        }),
      );
      if (!outcome.ok) return listPage(request, reply, 400, html``, { ...values, error: outcome.message });
      if (outcome.value.kind === "repeated") {
        return listPage(request, reply, 200, notice("ok", repeatedChangeText(outcome.value.change)), { url: "", description: "", eventTypes: [] });
      }
      const created = outcome.value.value;
      return sendPage(
        reply,
        201,
        page({
          title: "Endpoint added",
          screen: "webhooks",
          context,
          body: html`${shownOnce("new-secret", "Signing secret", created.secret, "signing secret")}
<p>Endpoint <code>${created.endpoint?.id}</code> at <code>${created.endpoint?.url}</code>. Verify each request's <code>webhook-signature</code> with this secret.</p>
<p><a href="/console/webhooks/${created.endpoint?.id}">I have stored it: go to the endpoint</a></p>`,
        }),
      );
    },
  };
}
