import { randomBytes } from "node:crypto";
import { pgTimestampToRfc3339Millis } from "@subdata/runtime";
import type { SessionContext } from "./console-context.ts";
import { html, type SafeHtml } from "./html.ts";

export type Screen = "keys" | "webhooks" | "audit";

const NAV: Array<{ screen: Screen; label: string; path: string }> = [
  { screen: "keys", label: "API keys", path: "/console/keys" },
  { screen: "webhooks", label: "Webhooks", path: "/console/webhooks" },
  { screen: "audit", label: "Audit log", path: "/console/audit" },
];

/** "2026-11-26 07:12 UTC": what a person reads in a table (the full instant is in the title). */
export function when(text: string | null | undefined, none = "—"): SafeHtml {
  if (!text) return html`${none}`;
  const iso = text.includes("T") ? text : pgTimestampToRfc3339Millis(text);
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace("T", " ")} UTC</time>`;
}

/**
 * The two hidden fields of every form that changes something: the session's synchronizer token (CSRF)
 * and a fresh idempotency key, so the same form sent twice (a reload, a double click) changes once.
 */
export function formGuard(context: SessionContext): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${context.csrfToken}"><input type="hidden" name="_idem" value="${randomBytes(18).toString("base64url")}">`;
}

/** A message above the screen's content: success (status) or a problem (alert). */
export function notice(kind: "ok" | "error", text: string | SafeHtml): SafeHtml {
  return kind === "ok" ? html`<p class="notice ok" role="status">${text}</p>` : html`<p class="notice error" role="alert">${text}</p>`;
}

export interface PageInput {
  title: string;
  screen?: Screen;
  context?: SessionContext;
  body: SafeHtml;
}

/** The document around every screen: header with the merchant and the user, navigation, sign-out. */
export function page(input: PageInput): string {
  const context = input.context;
  const header = context
    ? html`<header class="top">
  <div class="who"><strong>API &amp; integrations</strong> <span class="merchant">${context.session.merchant_id}</span>
    <span class="user">Signed in as ${context.session.user_name || context.session.user_id} · session ends ${when(context.session.expires_at)}</span></div>
  <nav aria-label="Sections"><ul>${NAV.map(
    (item) => html`<li><a href="${item.path}"${item.screen === input.screen ? html` aria-current="page"` : ""}>${item.label}</a></li>`,
  )}</ul></nav>
  <form method="post" action="/console/sign-out" class="sign-out">${formGuard(context)}<button type="submit" class="secondary">Sign out</button></form>
</header>`
    : html`<header class="top"><div class="who"><strong>API &amp; integrations</strong></div></header>`;
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${input.title} · API &amp; integrations</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
${header}
<main id="main">
<h1>${input.title}</h1>
${input.body}
</main>
</body>
</html>`}`;
}
