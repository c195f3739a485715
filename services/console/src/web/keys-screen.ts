import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ApiKey } from "@subdata/proto/subdata/auth/v1/api_key_pb";
import type { FastifyReply, FastifyRequest } from "fastify";
import { repeatedChangeText, runChange } from "./change-runner.ts";
import type { ConsoleWebDeps, SessionContext } from "./console-context.ts";
import { html, type SafeHtml } from "./html.ts";
import { formGuard, notice, page, when } from "./layout.ts";
import { PageError } from "./page-error.ts";
import { formOf, pager, queryText, seeOther, sendPage, sessionOf, shownOnce, timeText, tryForm } from "./screen-support.ts";

const DAY_MS = 86_400_000;
/** The expiry choices of the form; "never" is the default. */
const EXPIRIES: Array<{ value: string; label: string; ms: number | undefined }> = [
  { value: "never", label: "Never", ms: undefined },
  { value: "7d", label: "In 7 days", ms: 7 * DAY_MS },
  { value: "30d", label: "In 30 days", ms: 30 * DAY_MS },
  { value: "90d", label: "In 90 days", ms: 90 * DAY_MS },
  { value: "365d", label: "In 1 year", ms: 365 * DAY_MS },
];
const DONE: Record<string, string> = { revoked: "The key was revoked. Requests made with it are refused within a second." };

function keyStatus(key: ApiKey): "active" | "revoked" | "expired" {
  if (key.revokedAt) return "revoked";
  const expires = timeText(key.expiresAt);
  return expires !== null && expires <= new Date().toISOString() ? "expired" : "active";
}

interface CreateForm {
  name: string;
  expires: string;
  error?: string;
}

function createForm(context: SessionContext, form: CreateForm): SafeHtml {
  return html`<form method="post" action="/console/keys" class="card" novalidate>
<h2>Create an API key</h2>
${form.error ? html`<p class="field-error" id="key-error" role="alert">${form.error}</p>` : ""}
${formGuard(context)}
<label for="key-name">Name</label>
<p class="hint" id="key-name-hint">What uses the key, e.g. "warehouse sync". At most 100 characters.</p>
<input id="key-name" name="name" type="text" maxlength="100" required value="${form.name}" aria-describedby="key-name-hint${form.error ? " key-error" : ""}"${form.error ? html` aria-invalid="true"` : ""}>
<label for="key-expires">Expires</label>
<select id="key-expires" name="expires">${EXPIRIES.map(
    (choice) => html`<option value="${choice.value}"${choice.value === form.expires ? " selected" : ""}>${choice.label}</option>`,
  )}</select>
<div><button type="submit">Create key</button></div>
</form>`;
}

export function createKeysScreen(deps: ConsoleWebDeps) {
  const call = { timeoutMs: deps.upstreamTimeoutMs };

  async function listPage(request: FastifyRequest, reply: FastifyReply, status: number, top: SafeHtml, form: CreateForm) {
    const context = sessionOf(request);
    const pageToken = queryText(request, "page");
    const list = await deps.clients.apiKeys.listApiKeys({ merchantId: context.session.merchant_id, pageSize: 50, pageToken }, call);
    const rows = list.apiKeys.map((key) => {
      const status = keyStatus(key);
      return html`<tr>
<td>${key.name || html`<span class="hint">(no name)</span>`}</td>
<td><code>${key.displayPrefix}…</code></td>
<td>${when(timeText(key.createdAt))}</td>
<td>${when(timeText(key.expiresAt), "Never")}</td>
<td>${when(timeText(key.lastUsedAt), "Never")}</td>
<td class="status-${status}">${status}</td>
<td>${status === "revoked" ? "" : html`<a href="/console/keys/${key.id}/revoke" aria-label="Revoke ${key.name || key.displayPrefix}">Revoke</a>`}</td>
</tr>`;
    });
    const table = rows.length
      ? html`<div class="table-wrap"><table>
<caption class="hint">Keys of ${context.session.merchant_id}, newest first. The keys themselves are never shown again.</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="hint">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>${pager("/console/keys", new URLSearchParams(), list.nextPageToken, pageToken === "")}`
      : html`<p>No API keys yet.</p>`;
    const done = DONE[queryText(request, "done")];
    return sendPage(
      reply,
      status,
      page({
        title: "API keys",
        screen: "keys",
        context,
        body: html`${done ? notice("ok", done) : ""}${top}
<p>Your systems read subscriptions, charges and orders from the REST API with these keys (<code>Authorization: Bearer sds_…</code>).</p>
${createForm(context, form)}
<h2>Keys</h2>
${table}`,
      }),
    );
  }

  return {
    async list(request: FastifyRequest, reply: FastifyReply) {
      return listPage(request, reply, 200, html``, { name: "", expires: "never" });
    },

    async create(request: FastifyRequest, reply: FastifyReply) {
      const context = sessionOf(request);
      const form = formOf(request);
      const name = (form.get("name") ?? "").trim();
      const expires = form.get("expires") ?? "never";
      const choice = EXPIRIES.find((item) => item.value === expires);
      const values = { name, expires };
      let problem: string | undefined;
      if (name === "") problem = "Give the key a name, so you can tell it apart later.";
      else if ([...name].length > 100) problem = "The name can be at most 100 characters.";
      else if (/[\u0000-\u001f\u007f]/.test(name)) problem = "The name cannot contain control characters.";
      else if (!choice) problem = "Choose when the key expires.";
      if (problem) return listPage(request, reply, 400, html``, { ...values, error: problem });

      const outcome = await tryForm(() =>
        runChange(deps.changes, context, { action: "api_key.create", targetId: null, idempotencyKey: form.get("_idem") }, async () => {
          const expiresAt = choice?.ms === undefined ? undefined : timestampFromMs(Date.now() + choice.ms);
          const created = await deps.clients.apiKeys.createApiKey({ merchantId: context.session.merchant_id, name, expiresAt }, call);
          return { value: created, targetId: created.apiKey?.id ?? null };
        }),
      );
      if (!outcome.ok) return listPage(request, reply, 400, html``, { ...values, error: outcome.message });
      if (outcome.value.kind === "repeated")
        return listPage(request, reply, 200, notice("ok", repeatedChangeText(outcome.value.change)), { name: "", expires: "never" });
      const created = outcome.value.value;
      return sendPage(
        reply,
        201,
        page({
          title: "API key created",
          screen: "keys",
          context,
          body: html`${shownOnce("new-key", `API key “${name}”`, created.key, "key")}
<p>Prefix <code>${created.apiKey?.displayPrefix}…</code>, id <code>${created.apiKey?.id}</code>${
            created.apiKey?.expiresAt ? html`, expires ${when(timeText(created.apiKey.expiresAt))}` : ", never expires"
          }.</p>
<p><a href="/console/keys">I have stored it: back to API keys</a></p>`,
        }),
      );
    },

    async confirmRevoke(request: FastifyRequest<{ Params: { keyId: string } }>, reply: FastifyReply) {
      const context = sessionOf(request);
      const keyId = request.params.keyId;
      return sendPage(
        reply,
        200,
        page({
          title: "Revoke this API key?",
          screen: "keys",
          context,
          body: html`<form method="post" action="/console/keys/${keyId}/revoke" class="card">
${formGuard(context)}
<p>Key <code>${keyId}</code> stops working within a second, everywhere. Whatever uses it gets <strong>401</strong> from then on. This cannot be undone.</p>
<div class="actions"><button type="submit" class="danger">Revoke key</button> <a href="/console/keys">Cancel</a></div>
</form>`,
        }),
      );
    },

    async revoke(request: FastifyRequest<{ Params: { keyId: string } }>, reply: FastifyReply) {
      const context = sessionOf(request);
      const form = formOf(request);
      const keyId = request.params.keyId;
      const outcome = await tryForm(() =>
        runChange(deps.changes, context, { action: "api_key.revoke", targetId: keyId, idempotencyKey: form.get("_idem") }, async () => {
          await deps.clients.apiKeys.revokeApiKey({ merchantId: context.session.merchant_id, apiKeyId: keyId }, call);
          return { value: undefined, targetId: keyId };
        }),
      );
      if (!outcome.ok) throw new PageError(400, "The key could not be revoked", outcome.message);
      return seeOther(reply, "/console/keys", "revoked");
    },
  };
}
