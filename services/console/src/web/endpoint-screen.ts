import { create } from "@bufbuild/protobuf";
import { DurationSchema, FieldMaskSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { eventTypeName } from "@subdata/events";
import { AttemptErrorClass, DeliveryStatus } from "@subdata/proto/subdata/webhook/v1/delivery_pb";
import { type Endpoint, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import type { FastifyReply, FastifyRequest } from "fastify";
import { repeatedChangeText, runChange } from "./change-runner.ts";
import { deliveryChart } from "./delivery-chart.ts";
import type { ConsoleWebDeps, SessionContext } from "./console-context.ts";
import { html, type SafeHtml } from "./html.ts";
import { formGuard, notice, page, when } from "./layout.ts";
import { FormError, PageError } from "./page-error.ts";
import { formOf, pager, queryText, seeOther, sendPage, sessionOf, shownOnce, timeText, tryForm, utcInstant } from "./screen-support.ts";
import { endpointStatusText, eventTypeFieldset, eventTypesOf, eventTypesText } from "./webhooks-screen.ts";

type EndpointRequest = FastifyRequest<{ Params: { endpointId: string } }>;

const GRACE_CHOICES: Array<{ value: string; label: string; seconds: number }> = [
  { value: "24h", label: "24 hours (default)", seconds: 86_400 },
  { value: "1h", label: "1 hour", seconds: 3_600 },
  { value: "7d", label: "7 days", seconds: 604_800 },
  { value: "0", label: "None: the old secret stops at once", seconds: 0 },
];
const STATUS_FILTERS: Array<{ value: string; label: string; status: DeliveryStatus }> = [
  { value: "", label: "All", status: DeliveryStatus.UNSPECIFIED },
  { value: "pending", label: "Pending", status: DeliveryStatus.PENDING },
  { value: "succeeded", label: "Succeeded", status: DeliveryStatus.SUCCEEDED },
  { value: "failed", label: "Failed", status: DeliveryStatus.FAILED },
  { value: "cancelled", label: "Cancelled", status: DeliveryStatus.CANCELLED },
];
const DONE: Record<string, string> = {
  updated: "The endpoint was saved.",
  enabled: "The endpoint is enabled: new events are delivered to it.",
  disabled: "The endpoint is disabled: nothing is delivered to it until it is enabled again.",
  resent: "The event was scheduled for delivery again, with the same webhook-id.",
};

function statusName(status: DeliveryStatus): string {
  return (DeliveryStatus[status] ?? "UNSPECIFIED").toLowerCase();
}

function errorClassText(errorClass: AttemptErrorClass): string {
  return errorClass === AttemptErrorClass.NONE || errorClass === AttemptErrorClass.UNSPECIFIED
    ? ""
    : (AttemptErrorClass[errorClass] ?? "").toLowerCase().replaceAll("_", " ");
}

export function createEndpointScreen(deps: ConsoleWebDeps) {
  const call = { timeoutMs: deps.upstreamTimeoutMs };

  async function endpointOf(context: SessionContext, endpointId: string): Promise<Endpoint> {
    const found = await deps.clients.endpoints.getEndpoint({ merchantId: context.session.merchant_id, endpointId }, call);
    if (!found.endpoint) throw new PageError(404, "Not found", "There is no such endpoint.");
    return found.endpoint;
  }

  async function showPage(request: EndpointRequest, reply: FastifyReply, status: number, top: SafeHtml, formError?: string) {
    const context = sessionOf(request);
    const endpoint = await endpointOf(context, request.params.endpointId);
    const filter = STATUS_FILTERS.find((item) => item.value === queryText(request, "status")) ?? STATUS_FILTERS[0]!;
    const pageToken = queryText(request, "page");
    const [deliveries, summary] = await Promise.all([
      deps.clients.deliveries.listDeliveries(
        { merchantId: context.session.merchant_id, endpointId: endpoint.id, status: filter.status, pageSize: 25, pageToken },
        call,
      ),
      deps.clients.deliveries.summarizeDeliveries({ merchantId: context.session.merchant_id, endpointId: endpoint.id }, call),
    ]);
    const base = `/console/webhooks/${endpoint.id}`;
    const state = endpointStatusText(endpoint.status);
    const chosen = endpoint.eventTypes.map((type) => eventTypeName(type) ?? "");
    const rows = deliveries.deliveries.map(
      (delivery) => html`<tr>
<td><a href="${base}/deliveries/${delivery.id}" class="mono">${delivery.id}</a></td>
<td>${eventTypeName(delivery.eventType) ?? ""}<div class="hint mono">${delivery.resourceId} v${String(delivery.version)}</div></td>
<td class="status-${statusName(delivery.status)}">${statusName(delivery.status)}</td>
<td>${delivery.attemptCount}</td>
<td>${when(timeText(delivery.createdAt))}</td>
<td><form method="post" action="${base}/resend">${formGuard(context)}<input type="hidden" name="event_id" value="${delivery.eventId}"><button type="submit" class="secondary" aria-label="Resend ${delivery.eventId}">Resend</button></form></td>
</tr>`,
    );
    const filterParams = new URLSearchParams(filter.value ? { status: filter.value } : {});
    const deliveriesTable = rows.length
      ? html`<div class="table-wrap"><table>
<caption class="hint">Newest first.</caption>
<thead><tr><th scope="col">Delivery</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col"><span class="hint">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>${pager(base, filterParams, deliveries.nextPageToken, pageToken === "")}`
      : html`<p>No deliveries${filter.value ? ` with status ${filter.value}` : ""} yet.</p>`;
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
    const done = DONE[queryText(request, "done")];
    return sendPage(
      reply,
      status,
      page({
        title: "Webhook endpoint",
        screen: "webhooks",
        context,
        body: html`${done ? notice("ok", done) : ""}${top}${formError ? notice("error", formError) : ""}
<section class="card" aria-labelledby="summary-title">
<h2 id="summary-title" class="mono">${endpoint.url}</h2>
<p>Id <code>${endpoint.id}</code> · <span class="status-${state}">${state}</span>${endpoint.disabledReason ? ` (${endpoint.disabledReason})` : ""} · ${eventTypesText(endpoint)}</p>
${endpoint.previousSecretExpiresAt ? html`<p class="hint">The previous signing secret also signs until ${when(timeText(endpoint.previousSecretExpiresAt))}.</p>` : ""}
<div class="actions">
<form method="post" action="${base}/status">${formGuard(context)}<input type="hidden" name="status" value="${state === "enabled" ? "disabled" : "enabled"}"><button type="submit" class="secondary">${state === "enabled" ? "Disable" : "Enable"}</button></form>
<form method="post" action="${base}/test">${formGuard(context)}<button type="submit" class="secondary">Send a test event</button></form>
<a href="${base}/delete">Delete endpoint</a>
</div>
</section>
${deliveryChart(summary)}

<form method="post" action="${base}/update" class="card">
<h2>Settings</h2>
${formGuard(context)}
<label for="edit-url">URL</label>
<input id="edit-url" name="url" type="url" required value="${endpoint.url}">
<label for="edit-description">Description</label>
<input id="edit-description" name="description" type="text" maxlength="200" value="${endpoint.description}">
${eventTypeFieldset("edit", chosen)}
<div><button type="submit">Save</button></div>
</form>

<form method="post" action="${base}/rotate" class="card">
<h2>Rotate the signing secret</h2>
${formGuard(context)}
<p>A new secret is made and shown once. During the grace period each request carries signatures of both secrets, so your receiver can switch without failing a delivery.</p>
<label for="grace">Grace period</label>
<select id="grace" name="grace">${GRACE_CHOICES.map((choice) => html`<option value="${choice.value}">${choice.label}</option>`)}</select>
<div><button type="submit">Rotate secret</button></div>
</form>

<h2>Deliveries</h2>
<form method="get" action="${base}" class="actions">
<div><label for="delivery-status">Status</label>
<select id="delivery-status" name="status">${STATUS_FILTERS.map((item) => html`<option value="${item.value}"${item === filter ? " selected" : ""}>${item.label}</option>`)}</select></div>
<div><button type="submit" class="secondary">Filter</button></div>
</form>
${deliveriesTable}

<form method="post" action="${base}/replay" class="card">
<h2>Replay a time range</h2>
${formGuard(context)}
<p>Every event of this merchant in the range that this endpoint subscribes to is delivered again, in order, with its original webhook-id.</p>
<label for="replay-start">From (UTC)</label>
<input id="replay-start" name="start" type="datetime-local" required value="${hourAgo}">
<label for="replay-end">Until (UTC, optional: now)</label>
<input id="replay-end" name="end" type="datetime-local">
<div><button type="submit">Replay</button></div>
</form>`,
      }),
    );
  }

  /** Runs an endpoint change; a fixable failure shows the endpoint again with the message. */
  async function change<T>(
    request: EndpointRequest,
    reply: FastifyReply,
    action: string,
    perform: (context: SessionContext) => Promise<{ value: T; detail?: string }>,
    after: (value: T) => Promise<FastifyReply> | FastifyReply,
  ) {
    const context = sessionOf(request);
    const endpointId = request.params.endpointId;
    const outcome = await tryForm(() =>
      runChange(deps.changes, context, { action, targetId: endpointId, idempotencyKey: formOf(request).get("_idem") }, async () => ({
        ...(await perform(context)),
        targetId: endpointId,
      })),
    );
    if (!outcome.ok) return showPage(request, reply, 400, html``, outcome.message);
    if (outcome.value.kind === "repeated") return showPage(request, reply, 200, notice("ok", repeatedChangeText(outcome.value.change)));
    return after(outcome.value.value);
  }

  return {
    show(request: EndpointRequest, reply: FastifyReply) {
      return showPage(request, reply, 200, html``);
    },

    update(request: EndpointRequest, reply: FastifyReply) {
      const form = formOf(request);
      return change(
        request,
        reply,
        "webhook_endpoint.update",
        async (context) => {
          const url = (form.get("url") ?? "").trim();
          if (url === "") throw new FormError("Enter the URL subdata should send events to.");
          await deps.clients.endpoints.updateEndpoint(
            {
              merchantId: context.session.merchant_id,
              endpoint: { id: request.params.endpointId, url, description: (form.get("description") ?? "").trim(), eventTypes: eventTypesOf(form) },
              updateMask: create(FieldMaskSchema, { paths: ["url", "description", "event_types"] }),
            },
            call,
          );
          return { value: undefined };
        },
        () => seeOther(reply, `/console/webhooks/${request.params.endpointId}`, "updated"),
      );
    },

    setStatus(request: EndpointRequest, reply: FastifyReply) {
      const wanted = formOf(request).get("status") === "disabled" ? "disabled" : "enabled";
      return change(
        request,
        reply,
        `webhook_endpoint.${wanted === "enabled" ? "enable" : "disable"}`,
        async (context) => {
          await deps.clients.endpoints.updateEndpoint(
            {
              merchantId: context.session.merchant_id,
              endpoint: { id: request.params.endpointId, status: wanted === "enabled" ? EndpointStatus.ENABLED : EndpointStatus.DISABLED },
              updateMask: create(FieldMaskSchema, { paths: ["status"] }),
            },
            call,
          );
          return { value: undefined };
        },
        () => seeOther(reply, `/console/webhooks/${request.params.endpointId}`, wanted),
      );
    },

    rotate(request: EndpointRequest, reply: FastifyReply) {
      const grace = GRACE_CHOICES.find((choice) => choice.value === formOf(request).get("grace"));
      return change(
        request,
        reply,
        "webhook_endpoint.rotate_secret",
        async (context) => {
          if (!grace) throw new FormError("Choose a grace period.");
          const rotated = await deps.clients.endpoints.rotateSecret(
            {
              merchantId: context.session.merchant_id,
              endpointId: request.params.endpointId,
              gracePeriod: create(DurationSchema, { seconds: BigInt(grace.seconds) }),
            },
            call,
          );
          return { value: rotated, detail: `grace ${grace.value}` };
        },
        (rotated) =>
          sendPage(
            reply,
            200,
            page({
              title: "Signing secret rotated",
              screen: "webhooks",
              context: sessionOf(request),
              body: html`${shownOnce("new-secret", "New signing secret", rotated.secret, "new signing secret")}
<p>${
                rotated.endpoint?.previousSecretExpiresAt
                  ? html`The previous secret keeps signing until ${when(timeText(rotated.endpoint.previousSecretExpiresAt))}.`
                  : "The previous secret no longer signs."
              }</p>
<p><a href="/console/webhooks/${request.params.endpointId}">I have stored it: back to the endpoint</a></p>`,
            }),
          ),
      );
    },

    sendTest(request: EndpointRequest, reply: FastifyReply) {
      return change(
        request,
        reply,
        "webhook_endpoint.send_test_event",
        async (context) => {
          const sent = await deps.clients.endpoints.sendTestEvent({ merchantId: context.session.merchant_id, endpointId: request.params.endpointId }, call);
          return { value: sent, detail: sent.deliveryId };
        },
        (sent) => showPage(request, reply, 200, notice("ok", html`A test event was sent (delivery <code>${sent.deliveryId}</code>).`)),
      );
    },

    confirmDelete(request: EndpointRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const endpointId = request.params.endpointId;
      return sendPage(
        reply,
        200,
        page({
          title: "Delete this endpoint?",
          screen: "webhooks",
          context,
          body: html`<form method="post" action="/console/webhooks/${endpointId}/delete" class="card">
${formGuard(context)}
<p>Endpoint <code>${endpointId}</code> is removed and its pending deliveries are cancelled. This cannot be undone.</p>
<div class="actions"><button type="submit" class="danger">Delete endpoint</button> <a href="/console/webhooks/${endpointId}">Cancel</a></div>
</form>`,
        }),
      );
    },

    async remove(request: EndpointRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const endpointId = request.params.endpointId;
      const outcome = await tryForm(() =>
        runChange(
          deps.changes,
          context,
          { action: "webhook_endpoint.delete", targetId: endpointId, idempotencyKey: formOf(request).get("_idem") },
          async () => {
            await deps.clients.endpoints.deleteEndpoint({ merchantId: context.session.merchant_id, endpointId }, call);
            return { value: undefined, targetId: endpointId };
          },
        ),
      );
      if (!outcome.ok) throw new PageError(400, "The endpoint could not be deleted", outcome.message);
      return seeOther(reply, "/console/webhooks", "deleted");
    },

    resend(request: EndpointRequest, reply: FastifyReply) {
      const eventId = formOf(request).get("event_id") ?? "";
      return change(
        request,
        reply,
        "webhook_delivery.resend",
        async (context) => {
          const resent = await deps.clients.deliveries.resendEvent(
            { merchantId: context.session.merchant_id, endpointId: request.params.endpointId, eventId },
            call,
          );
          return { value: resent, detail: eventId };
        },
        () => seeOther(reply, `/console/webhooks/${request.params.endpointId}`, "resent"),
      );
    },

    replay(request: EndpointRequest, reply: FastifyReply) {
      const form = formOf(request);
      return change(
        request,
        reply,
        "webhook_delivery.replay",
        async (context) => {
          const start = utcInstant(form.get("start") ?? "", "From");
          const endText = form.get("end") ?? "";
          const end = endText === "" ? undefined : utcInstant(endText, "Until");
          if (end !== undefined && end <= start) throw new FormError("Until must be after From.");
          const replayed = await deps.clients.deliveries.replayEvents(
            {
              merchantId: context.session.merchant_id,
              endpointId: request.params.endpointId,
              startTime: timestampFromMs(start),
              endTime: end === undefined ? undefined : timestampFromMs(end),
            },
            call,
          );
          return { value: replayed, detail: `${replayed.scheduledCount} scheduled` };
        },
        (replayed) =>
          showPage(
            request,
            reply,
            200,
            notice("ok", `${replayed.scheduledCount} ${replayed.scheduledCount === 1 ? "delivery was" : "deliveries were"} scheduled again.`),
          ),
      );
    },

    async attempts(request: FastifyRequest<{ Params: { endpointId: string; deliveryId: string } }>, reply: FastifyReply) {
      const context = sessionOf(request);
      const { endpointId, deliveryId } = request.params;
      const pageToken = queryText(request, "page");
      const attempts = await deps.clients.deliveries.listAttempts({ merchantId: context.session.merchant_id, deliveryId, pageSize: 50, pageToken }, call);
      const rows = attempts.attempts.map((attempt) => {
        const ok = attempt.responseStatus >= 200 && attempt.responseStatus < 300;
        const latencyMs = attempt.latency ? Number(attempt.latency.seconds) * 1000 + Math.round(attempt.latency.nanos / 1e6) : null;
        return html`<tr>
<td>${attempt.attemptNumber}</td>
<td>${when(timeText(attempt.startedAt))}</td>
<td class="${ok ? "status-succeeded" : "status-failed"}">${attempt.responseStatus === 0 ? "no response" : attempt.responseStatus}${
          errorClassText(attempt.errorClass) ? html`<div class="hint">${errorClassText(attempt.errorClass)}</div>` : ""
        }</td>
<td>${latencyMs === null ? "—" : `${latencyMs} ms`}</td>
<td>${attempt.responseBody ? html`<pre class="excerpt">${attempt.responseBody.slice(0, 500)}</pre>` : html`<span class="hint">empty</span>`}</td>
</tr>`;
      });
      return sendPage(
        reply,
        200,
        page({
          title: "Delivery attempts",
          screen: "webhooks",
          context,
          body: html`<p>Delivery <code>${deliveryId}</code> · <a href="/console/webhooks/${endpointId}">back to the endpoint</a></p>
${
  rows.length
    ? html`<div class="table-wrap"><table>
<caption class="hint">Each HTTP request made for this delivery, oldest first.</caption>
<thead><tr><th scope="col">#</th><th scope="col">Started</th><th scope="col">Response</th><th scope="col">Latency</th><th scope="col">Response excerpt</th></tr></thead>
<tbody>${rows}</tbody></table></div>${pager(`/console/webhooks/${endpointId}/deliveries/${deliveryId}`, new URLSearchParams(), attempts.nextPageToken, pageToken === "")}`
    : html`<p>No attempt yet: the delivery is waiting for its first one.</p>`
}`,
        }),
      );
    },
  };
}
