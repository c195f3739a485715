import { randomUUID } from "node:crypto";
import { pgTimestampToRfc3339Millis } from "@subdata/runtime";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { consoleScript, consoleStyles } from "./assets.ts";
import type { ConsoleWebDeps } from "./console-context.ts";
import { html } from "./html.ts";
import { page } from "./layout.ts";
import { FormError, PageError, pageErrorOf } from "./page-error.ts";
import { sendPage } from "./screen-support.ts";
import { cookieName, readCookie, sessionCookie } from "./session-cookie.ts";
import { csrfTokenFor, csrfTokenMatches, newToken, tokenHash } from "../session-token.ts";
import { registerScreens } from "./web-routes.ts";

/** Paths that answer without a session: opening a link, the static files, the probes. */
const PUBLIC_PATHS = new Set(["/console/open", "/console/assets/console.css", "/console/assets/console.js", "/livez", "/readyz"]);

function contentSecurityPolicy(frameAncestors: string): string {
  return [
    "default-src 'none'",
    // Our one script and one stylesheet, from this origin; nothing inline, nothing from elsewhere.
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    `frame-ancestors ${frameAncestors === "" ? "'none'" : frameAncestors}`,
  ].join("; ");
}

function errorPage(title: string, message: string, withSession: boolean): string {
  const again = withSession
    ? html`<p><a href="/console/keys">Back to the page</a></p>`
    : html`<p>Open <strong>API &amp; integrations</strong> again from your app to get a new link.</p>`;
  return page({ title, body: html`<p role="alert">${message}</p>${again}` });
}

/**
 * The page as an HTTP/1.1 server (Fastify): security headers on every answer, the session from its
 * cookie on every path but the public ones, a synchronizer token and a same-origin check on every POST,
 * and errors as pages of their own. Never listens by itself.
 */
export function createConsoleWeb(deps: ConsoleWebDeps): FastifyInstance {
  const publicUrl = new URL(deps.publicUrl);
  const secure = publicUrl.protocol === "https:";
  const cookie = cookieName(secure);
  const policy = contentSecurityPolicy(deps.frameAncestors);
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024, genReqId: () => `req_${randomUUID().replaceAll("-", "")}` });

  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) => {
    done(null, new URLSearchParams(body as string));
  });

  app.addHook("onRequest", async (request, reply) => {
    reply.header("content-security-policy", policy);
    reply.header("x-content-type-options", "nosniff");
    // Not no-referrer: with it, browsers send "Origin: null" on form posts, and the origin check needs it.
    reply.header("referrer-policy", "same-origin");
    reply.header("cache-control", "no-store");
    reply.header("cross-origin-opener-policy", "same-origin");
    reply.header("cross-origin-resource-policy", "same-origin");
    reply.header("permissions-policy", "camera=(), microphone=(), geolocation=(), payment=()");
    if (deps.frameAncestors === "") reply.header("x-frame-options", "DENY");
    if (secure) reply.header("strict-transport-security", "max-age=31536000");
    const path = request.url.split("?")[0]!;
    if (PUBLIC_PATHS.has(path)) return;
    const value = readCookie(request.headers.cookie, cookie);
    const session = value ? await deps.sessions.findByCookie(tokenHash(value)) : undefined;
    if (!value || !session) {
      return sendPage(
        reply,
        401,
        errorPage("Your session has ended", "This page was opened from your app for a limited time, and that time is over or it was signed out.", false),
      );
    }
    request.console = { session, csrfToken: csrfTokenFor(value) };
  });

  // Every change: same origin when the browser says where the form came from, and the session's form token.
  app.addHook("preHandler", async (request, reply) => {
    if (request.method !== "POST" || !request.console) return;
    const origin = request.headers.origin;
    const form = request.body instanceof URLSearchParams ? request.body : undefined;
    const value = readCookie(request.headers.cookie, cookie) ?? "";
    if ((origin !== undefined && origin !== publicUrl.origin) || !form || !csrfTokenMatches(value, form.get("_csrf") ?? "")) {
      return sendPage(
        reply,
        403,
        errorPage("This form could not be accepted", "It was not sent from this page (or the page is too old). Reload it and try again.", true),
      );
    }
  });

  app.setErrorHandler(async (error, request, reply) => {
    const known = error instanceof PageError || error instanceof FormError ? error : pageErrorOf(error);
    if (known instanceof PageError) return sendPage(reply, known.status, errorPage(known.title, known.message, !!request.console));
    if (known instanceof FormError) return sendPage(reply, 400, errorPage("That did not work", known.message, !!request.console));
    const status = (error as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return sendPage(reply, status, errorPage("That request was not understood", "Go back and try again.", !!request.console));
    }
    deps.logger.error({ err: error, requestId: request.id, path: request.routeOptions.url }, "console page failed");
    return sendPage(
      reply,
      500,
      errorPage("Something went wrong", `subdata could not show this page. If it happens again, quote ${request.id}.`, !!request.console),
    );
  });

  app.setNotFoundHandler(async (request, reply) => sendPage(reply, 404, errorPage("Not found", "There is no such page.", !!request.console)));

  app.get("/livez", async (_request, reply) => reply.type("text/plain").send("ok"));
  app.get("/readyz", async (_request, reply) => reply.type("text/plain").send("ok"));
  app.get("/console/assets/console.css", async (_request, reply) =>
    reply.type("text/css; charset=utf-8").header("cache-control", "public, max-age=300").send(consoleStyles),
  );
  app.get("/console/assets/console.js", async (_request, reply) =>
    reply.type("text/javascript; charset=utf-8").header("cache-control", "public, max-age=300").send(consoleScript),
  );

  // The app's link: trade the one-time token for the cookie, then leave the address without it.
  app.get("/console/open", async (request: FastifyRequest<{ Querystring: { token?: string } }>, reply) => {
    const token = typeof request.query.token === "string" ? request.query.token : "";
    const value = newToken();
    const session = token ? await deps.sessions.open(tokenHash(token), tokenHash(value)) : undefined;
    if (!session) {
      return sendPage(
        reply,
        401,
        errorPage("This link cannot be used", "Links to this page work once and only for a few minutes. This one was used already or has expired.", false),
      );
    }
    deps.logger.info({ portalSessionId: session.id, merchantId: session.merchant_id }, "portal session opened");
    const secondsLeft = (Date.parse(pgTimestampToRfc3339Millis(session.expires_at)) - Date.now()) / 1000;
    reply.header("set-cookie", sessionCookie(cookie, value, secondsLeft, secure));
    // The address still holds the token: it must not travel on, not even to this origin's next request.
    reply.header("referrer-policy", "no-referrer");
    // A same-site navigation of its own (not a redirect), so that the Strict cookie is sent with it even
    // when the link was followed from the app's site.
    return sendPage(
      reply,
      200,
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=/console/keys"><title>Opening API &amp; integrations</title></head><body><p><a href="/console/keys">Continue to API &amp; integrations</a></p></body></html>`,
    );
  });

  app.post("/console/sign-out", async (request, reply) => {
    const context = request.console!;
    await deps.sessions.revoke(context.session.merchant_id, context.session.id);
    reply.header("set-cookie", sessionCookie(cookie, "", 0, secure));
    return sendPage(reply, 200, page({ title: "Signed out", body: html`<p role="status">You are signed out of API &amp; integrations.</p>` }));
  });

  app.get("/console", async (_request, reply) => reply.redirect("/console/keys", 303));
  app.get("/console/", async (_request, reply) => reply.redirect("/console/keys", 303));
  registerScreens(app, deps);
  return app;
}
