import { timestampToRfc3339Millis } from "@subdata/runtime";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { SessionContext } from "./console-context.ts";
import { html, type SafeHtml } from "./html.ts";
import { FormError, PageError, pageErrorOf } from "./page-error.ts";

/** A whole document as the answer, with the status given. */
export function sendPage(reply: FastifyReply, status: number, document: string): FastifyReply {
  return reply.code(status).type("text/html; charset=utf-8").send(document);
}

/** The session of a request the hook let through. */
export function sessionOf(request: FastifyRequest): SessionContext {
  if (!request.console) throw new PageError(401, "Your session has ended", "Open the page again from your app.");
  return request.console;
}

/** The POSTed form (the preHandler already refused anything else). */
export function formOf(request: FastifyRequest): URLSearchParams {
  return request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
}

/** A timestamp as the text `when()` shows, or null. */
export function timeText(timestamp: Timestamp | undefined): string | null {
  return timestamp ? timestampToRfc3339Millis(timestamp) : null;
}

/** "2026-11-26T07:00" from a datetime-local field, read as UTC; a FormError names the field otherwise. */
export function utcInstant(text: string, label: string): number {
  const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(text) ? Date.parse(`${text}Z`) : Number.NaN;
  if (Number.isNaN(ms)) throw new FormError(`${label}: enter a date and time (UTC).`);
  return ms;
}

/** A query parameter as one string ("" when absent or repeated). */
export function queryText(request: FastifyRequest, name: string): string {
  const value = (request.query as Record<string, unknown>)[name];
  return typeof value === "string" ? value : "";
}

/**
 * Runs a change; a failure the merchant can fix comes back as its message (to show beside the form), any
 * other failure propagates to the error page.
 */
export async function tryForm<T>(work: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; message: string }> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    const known = error instanceof FormError ? error : pageErrorOf(error);
    if (known instanceof FormError) return { ok: false, message: known.message };
    throw known ?? error;
  }
}

/** 303 to a screen with a notice code (PRG: a reload of the result page changes nothing). */
export function seeOther(reply: FastifyReply, path: string, done: string): FastifyReply {
  const separator = path.includes("?") ? "&" : "?";
  return reply.redirect(`${path}${separator}done=${encodeURIComponent(done)}`, 303);
}

/** The value shown once (a key, a signing secret), with a copy button and the warning. */
export function shownOnce(id: string, label: string, value: string, what: string): SafeHtml {
  return html`<section class="secret" aria-labelledby="${id}-title">
<h2 id="${id}-title">${label}</h2>
<p role="alert"><strong>Copy the ${what} now.</strong> It is shown only this once: subdata does not keep it readable, and nobody can show it to you again. Store it in your secret manager.</p>
<label for="${id}">${label}</label>
<input id="${id}" type="text" readonly value="${value}" data-select-on-focus autocomplete="off" spellcheck="false">
<div class="actions"><button type="button" data-copy="${id}" hidden>Copy</button><span id="${id}-copied" role="status"></span></div>
</section>`;
}

/** A pager under a table: the next page by its token, and the first page when not on it. */
export function pager(path: string, params: URLSearchParams, nextPageToken: string, onFirstPage: boolean): SafeHtml {
  const first = new URLSearchParams(params);
  first.delete("page");
  const next = new URLSearchParams(params);
  next.set("page", nextPageToken);
  const firstQuery = first.toString();
  return html`<nav class="pager" aria-label="Pages">${onFirstPage ? "" : html`<a href="${path}${firstQuery ? `?${firstQuery}` : ""}">First page</a>`}${
    nextPageToken ? html`<a href="${path}?${next.toString()}">Next page</a>` : ""
  }</nav>`;
}
