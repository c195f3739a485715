import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFixtures } from "../support/fixtures.ts";
import { waitFor } from "../support/wait-for.ts";
import { type Receiver, startReceiver } from "../webhook-delivery/support/receiver.ts";
import { ARTIFACTS, launchChromium, seriousViolations } from "./browser.ts";
import { type ConsoleStack, startConsoleStack } from "./console-stack.ts";

/**
 * The console page in a real browser (Debian's chromium through playwright-core) against the real stack:
 * a session minted over RPC, keys created and revoked and used against /api/v1, an endpoint registered
 * at a local receiver, a subscription changed in Postgres and its delivery seen with its attempt, the
 * secret rotated, a range replayed, the audit log read and exported; expired, revoked and foreign
 * sessions refused; axe-core on every screen; a screenshot of each.
 */
describe("the API & integrations page in a browser", () => {
  let stack: ConsoleStack;
  let browser: Browser;
  let receiver: Receiver;
  let merchantId: string;
  let otherMerchantId: string;
  let subscriptionId: string;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    [stack, browser, receiver] = await Promise.all([startConsoleStack(), launchChromium(), startReceiver()]);
    const fixtures = createFixtures(stack.admin);
    merchantId = await fixtures.merchant();
    otherMerchantId = await fixtures.merchant();
    subscriptionId = (await fixtures.subscription({ merchantId, status: "ACTIVE" })).id;
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await stack?.close();
  });

  async function openSession(options: { merchant?: string; ttlSeconds?: number } = {}) {
    const created = await stack.portalSessions.createPortalSession({
      merchantId: options.merchant ?? merchantId,
      userId: "usr_42",
      userName: "Ada Lovelace",
      ttl: options.ttlSeconds ? create(DurationSchema, { seconds: BigInt(options.ttlSeconds) }) : undefined,
    });
    return { url: created.url, id: created.portalSession!.id };
  }

  async function signedIn(options: { viewport?: { width: number; height: number } } = {}): Promise<{ context: BrowserContext; page: Page; sessionId: string }> {
    const { url, id } = await openSession();
    const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await page.goto(url);
    await page.waitForURL(`${stack.consoleUrl}/keys`);
    return { context, page, sessionId: id };
  }

  /** Waits until an element of `locator` contains `text` (the page is server-rendered: once loaded, it is there). */
  async function shows(locator: Locator, text: string | RegExp) {
    await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
  }

  async function check(page: Page, name: string) {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    expect(await seriousViolations(page), `axe on ${name}`).toEqual([]);
  }

  it("opens from a one-time link with a Strict, HttpOnly cookie, and the link works only once", async () => {
    const { url } = await openSession();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForURL(`${stack.consoleUrl}/keys`);
    expect(page.url()).not.toContain("token");
    await shows(page.locator("header"), "Ada Lovelace");
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: "subdata_console", httpOnly: true, sameSite: "Strict", path: "/console" });
    const csp = (await context.request.get(`${stack.consoleUrl}/keys`)).headers()["content-security-policy"];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");

    const again = await (await browser.newContext()).newPage();
    const response = await again.goto(url);
    expect(response?.status()).toBe(401);
    await shows(again.locator("h1"), "This link cannot be used");
    await context.close();
  });

  it("creates a key shown once, which reads /api/v1; a resubmitted form creates nothing; revoked, it gets 401", async () => {
    const { context, page } = await signedIn();
    await check(page, "keys");
    await page.getByLabel("Name").fill("warehouse sync");
    await page.getByLabel("Expires").selectOption("30d");
    await page.getByRole("button", { name: "Create key" }).click();
    await shows(page.locator("h1"), "API key created");
    await shows(page.getByRole("alert"), "shown only this once");
    await page.getByRole("button", { name: "Copy" }).waitFor({ state: "visible" });
    const key = await page.locator("#new-key").inputValue();
    expect(key).toMatch(/^sds_/);
    await check(page, "key-created");

    const read = await fetch(`${stack.gatewayUrl}/api/v1/subscriptions?limit=1`, { headers: { authorization: `Bearer ${key}` } });
    expect(read.status).toBe(200);

    // The same form sent twice (a reload of the result, a double click): one key, and a clear notice.
    await page.goto(`${stack.consoleUrl}/keys`);
    await page.getByLabel("Name").fill("only once");
    const fields = {
      _csrf: await page.locator('form[action="/console/keys"] input[name="_csrf"]').inputValue(),
      _idem: await page.locator('form[action="/console/keys"] input[name="_idem"]').inputValue(),
      name: "only once",
      expires: "never",
    };
    const first = await context.request.post(`${stack.consoleUrl}/keys`, { form: fields });
    const second = await context.request.post(`${stack.consoleUrl}/keys`, { form: fields });
    expect(first.status()).toBe(201);
    expect(await second.text()).toContain("already done");
    await page.goto(`${stack.consoleUrl}/keys`);
    expect(await page.locator("tbody tr", { hasText: "only once" }).count()).toBe(1);

    // A form without the session's token is refused.
    const forged = await context.request.post(`${stack.consoleUrl}/keys`, { form: { ...fields, _csrf: "forged", _idem: "abcdefghijklmnopqrstuv" } });
    expect(forged.status()).toBe(403);

    // Invalid input: the form again, with a message, nothing created.
    await page.getByLabel("Name").fill("");
    await page.getByRole("button", { name: "Create key" }).click();
    await shows(page.locator("#key-error"), "Give the key a name");

    await page
      .locator("tbody tr", { hasText: "warehouse sync" })
      .getByRole("link", { name: /Revoke/ })
      .click();
    await shows(page.locator("h1"), "Revoke this API key?");
    await check(page, "key-revoke-confirm");
    await page.getByRole("button", { name: "Revoke key" }).click();
    await shows(page.getByRole("status").first(), "The key was revoked");
    await shows(page.locator("tbody tr", { hasText: "warehouse sync" }), "revoked");
    await waitFor("the revoked key to be refused", async () => {
      const response = await fetch(`${stack.gatewayUrl}/api/v1/subscriptions?limit=1`, { headers: { authorization: `Bearer ${key}` } });
      return response.status === 401;
    });
    await context.close();
  });

  it("registers an endpoint, shows a subscription change's delivery and attempt, rotates the secret and replays", async () => {
    const { page, context } = await signedIn();
    await page.getByRole("link", { name: "Webhooks" }).click();
    await check(page, "webhooks");
    await page.getByLabel("URL", { exact: true }).fill("ftp://example.com/hooks");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await page.locator("#endpoint-error").waitFor({ state: "visible" });

    await page.getByLabel("URL", { exact: true }).fill(`${receiver.origin}/hooks`);
    await page.getByLabel("subscription.updated").check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await shows(page.locator("h1"), "Endpoint added");
    const secret = await page.locator("#new-secret").inputValue();
    expect(secret).toMatch(/^whsec_/);
    await check(page, "endpoint-created");
    await page.getByRole("link", { name: /go to the endpoint/ }).click();
    const endpointPath = new URL(page.url()).pathname;

    await stack.admin.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = $1", [subscriptionId]);
    await waitFor("the receiver to get the event", () => receiver.requests.length >= 1);
    await waitFor("the delivery to show as succeeded", async () => {
      await page.reload();
      return (await page.locator("tbody tr", { hasText: "subscription.updated" }).filter({ hasText: "succeeded" }).count()) === 1;
    });
    // The 24-hour chart: the one attempt so far, drawn inline (two SVGs) and told in words and as a table.
    await shows(page.locator("#health-summary"), "1 attempt, 1 succeeded (100 %), 0 failed");
    expect(await page.locator("svg.chart[role=img]").count()).toBe(2);
    await page.getByText("The numbers, hour by hour").click();
    const hours = page.locator("#health-table tbody tr");
    expect(await hours.count()).toBe(24);
    expect(await hours.filter({ has: page.locator("td:nth-child(2)", { hasText: /^1$/ }) }).count()).toBe(1);
    await check(page, "endpoint");
    await page.locator("tbody tr", { hasText: "subscription.updated" }).getByRole("link").first().click();
    await shows(page.locator("h1"), "Delivery attempts");
    expect(await page.locator("tbody tr").count()).toBe(1);
    await shows(page.locator("tbody tr"), "200");
    await shows(page.locator("tbody tr"), " ms");
    await check(page, "delivery-attempts");

    await page.goto(`${stack.consoleUrl.replace(/\/console$/, "")}${endpointPath}`);
    await page.getByLabel("Grace period").selectOption("1h");
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await shows(page.locator("h1"), "Signing secret rotated");
    const rotated = await page.locator("#new-secret").inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await check(page, "secret-rotated");

    await page.goto(`${stack.consoleUrl.replace(/\/console$/, "")}${endpointPath}`);
    const before = receiver.requests.length;
    await page.getByRole("button", { name: "Replay" }).click();
    await shows(page.getByRole("status").first(), "1 delivery was scheduled again");
    await waitFor("the replayed event to arrive", () => receiver.requests.length > before);
    expect(receiver.requests.at(-1)!.headers["webhook-id"]).toBe(receiver.requests[0]!.headers["webhook-id"]);

    await page.getByRole("button", { name: "Send a test event" }).click();
    await shows(page.getByRole("status").first(), "A test event was sent");
    await page.getByRole("button", { name: "Disable" }).click();
    await shows(page.locator("#summary-title + p"), "disabled");
    await page.getByRole("button", { name: "Enable" }).click();
    await shows(page.locator("#summary-title + p"), "enabled");
    await context.close();
  });

  it("filters the audit log by key, route, status and time, exports what the filters show as CSV, and lists the changes with their user", async () => {
    const { page, context } = await signedIn();
    await page.getByLabel("Name").fill("audited");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = await page.locator("#new-key").inputValue();
    const read = (path: string) => fetch(`${stack.gatewayUrl}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } });
    expect((await read("/subscriptions?limit=2")).status).toBe(200);
    expect((await read("/subscriptions/sub_00000000000000000000000000000000")).status).toBe(404);

    await page.goto(`${stack.consoleUrl}/audit`);
    const keyOption = await page.locator("#audit-key option", { hasText: "audited" }).getAttribute("value");
    await page.getByLabel("API key").selectOption(keyOption!);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/key=key_/);
    const reads = page.locator("table").first().locator("tbody tr");
    expect(await reads.count()).toBe(2);
    await shows(page.locator("table").nth(1), "Ada Lovelace");
    await shows(page.locator("table").nth(1), "api_key.create");

    // Status and route narrow it to the 404; a route in the table is itself a filter link.
    await page.getByLabel("Status").selectOption("4xx");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/status=4xx/);
    expect(await reads.count()).toBe(1);
    await shows(reads, "404");
    await reads.getByRole("link", { name: "/v1/subscriptions/{id}" }).click();
    await page.waitForURL(/route=/);
    expect(await page.getByLabel("Route").inputValue()).toBe("/v1/subscriptions/{id}");
    expect(await reads.count()).toBe(1);
    await check(page, "audit");

    const csv = await context.request.get(`${stack.consoleUrl}/audit.csv?${new URL(page.url()).searchParams.toString()}`);
    expect(csv.headers()["content-type"]).toContain("text/csv");
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toBe("id,occurred_at,api_key_id,request_id,method,route,query,status,result_count,latency_ms,client_ip,user_agent");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain("/v1/subscriptions/{id}");
    expect(lines[1]).toContain(",404,");
    // An export carries every matching row, however many: 10,500 reads of one route stream out whole.
    await stack.admin.query(
      `INSERT INTO audit_events (id, occurred_at, merchant_id, api_key_id, request_id, method, route, query, resource_ids, result_count, status,
                                 client_ip, user_agent, latency_micros)
       SELECT 'aud_bulk_' || n, now() - make_interval(secs => n), $1, 'key_bulk', 'req_bulk_' || n, 'GET', '/v1/orders', '', '{}', 0, 200,
              '127.0.0.1', 'bulk', 1000
         FROM generate_series(1, 10500) AS n`,
      [merchantId],
    );
    const bulk = await context.request.get(`${stack.consoleUrl}/audit.csv?route=${encodeURIComponent("/v1/orders")}`);
    expect(bulk.status()).toBe(200);
    const bulkLines = (await bulk.text()).trim().split("\r\n");
    expect(bulkLines).toHaveLength(10_501);
    expect(new Set(bulkLines.slice(1).map((line) => line.split(",")[0])).size).toBe(10_500);
    const exportHref = await page.getByRole("link", { name: /Export as CSV/ }).getAttribute("href");
    expect(exportHref).toContain("status=4xx");

    // A time range after the reads shows none; a reversed one is refused with a message, not a list.
    const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);
    await page.getByLabel("From (UTC)").fill(later);
    await page.getByRole("button", { name: "Filter" }).click();
    await shows(page.locator("main"), "No reads recorded that match the filters");
    await page.getByLabel("Until (UTC)").fill(new Date(Date.now() - 3_600_000).toISOString().slice(0, 16));
    const [refused] = await Promise.all([
      page.waitForResponse((response) => response.url().includes("until=")),
      page.getByRole("button", { name: "Filter" }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await shows(page.getByRole("alert"), "Until must be after From");
    expect((await context.request.get(`${stack.consoleUrl}/audit.csv?${new URL(page.url()).searchParams.toString()}`)).status()).toBe(400);
    await page.getByRole("link", { name: "Clear filters" }).click();
    await page.waitForURL(`${stack.consoleUrl}/audit`);
    expect(await reads.count()).toBeGreaterThanOrEqual(2);

    const { rows } = await stack.admin.query<{ user_id: string; user_name: string; status: string }>(
      "SELECT user_id, user_name, status FROM console_changes WHERE merchant_id = $1 AND action = 'api_key.create'",
      [merchantId],
    );
    expect(rows.length).toBeGreaterThanOrEqual(3);
    expect(rows.every((row) => row.user_id === "usr_42" && row.user_name === "Ada Lovelace")).toBe(true);
    await context.close();
  });

  it("creates and revokes a key with the keyboard alone, focus always visible", async () => {
    const { page, context } = await signedIn();
    /** Presses Tab until the focused element matches, as a keyboard user would (at most 60 stops). */
    async function tabTo(selector: string) {
      for (let stop = 0; stop < 60; stop++) {
        await page.keyboard.press("Tab");
        const matched = await page.evaluate(`document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`);
        if (matched) {
          const outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle");
          expect(outline, `focus ring on ${selector}`).not.toBe("none");
          return;
        }
      }
      throw new Error(`Tab never reached ${selector}`);
    }
    await tabTo("#key-name");
    await page.keyboard.type("keyboard only");
    await tabTo('form[action="/console/keys"] button[type=submit]');
    await page.keyboard.press("Enter");
    await shows(page.locator("h1"), "API key created");
    expect(await page.locator("#new-key").inputValue()).toMatch(/^sds_/);

    await page.goto(`${stack.consoleUrl}/keys`);
    await tabTo('a[aria-label="Revoke keyboard only"]');
    await page.keyboard.press("Enter");
    await shows(page.locator("h1"), "Revoke this API key?");
    await tabTo("button.danger");
    await page.keyboard.press("Enter");
    await shows(page.getByRole("status").first(), "The key was revoked");
    await shows(page.locator("tbody tr", { hasText: "keyboard only" }), "revoked");
    await context.close();
  });

  it("adds one endpoint and rotates its secret once when the same form arrives twice (a reload of the result, a double click)", async () => {
    const { page, context } = await signedIn();
    const formFields = async (action: string) =>
      Object.fromEntries(
        await Promise.all(
          ["_csrf", "_idem"].map(async (name) => [name, await page.locator(`form[action="${action}"] input[name="${name}"]`).inputValue()] as const),
        ),
      );
    const url = `${receiver.origin}/twice`;
    await page.goto(`${stack.consoleUrl}/webhooks`);
    const create = { ...(await formFields("/console/webhooks")), url, description: "sent twice" };
    const first = await context.request.post(`${stack.consoleUrl}/webhooks`, { form: create });
    const second = await context.request.post(`${stack.consoleUrl}/webhooks`, { form: create });
    expect(first.status()).toBe(201);
    expect(await first.text()).toContain("whsec_");
    expect(await second.text()).toContain("already done");
    expect(await second.text()).not.toContain("whsec_");
    const listed = await stack.endpoints.listEndpoints({ merchantId, pageSize: 200 });
    const added = listed.endpoints.filter((endpoint) => endpoint.url === url);
    expect(added).toHaveLength(1);

    const base = `/console/webhooks/${added[0]!.id}`;
    await page.goto(`${stack.consoleUrl.replace(/\/console$/, "")}${base}`);
    const rotate = { ...(await formFields(`${base}/rotate`)), grace: "1h" };
    const rotated = await context.request.post(`${stack.consoleUrl.replace(/\/console$/, "")}${base}/rotate`, { form: rotate });
    const again = await context.request.post(`${stack.consoleUrl.replace(/\/console$/, "")}${base}/rotate`, { form: rotate });
    expect(await rotated.text()).toContain("whsec_");
    expect(await again.text()).toContain("already done");
    expect(await again.text()).not.toContain("whsec_");
    const { rows } = await stack.admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM console_changes WHERE merchant_id = $1 AND action = 'webhook_endpoint.rotate_secret' AND target_id = $2",
      [merchantId, added[0]!.id],
    );
    expect(rows[0]!.n).toBe(1);
    await context.close();
  });

  it("is usable at phone width: nothing overflows the screen", async () => {
    const { page, context } = await signedIn({ viewport: { width: 390, height: 844 } });
    await page.screenshot({ path: join(ARTIFACTS, "keys-phone.png"), fullPage: true });
    const overflow = () => page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
    expect(await overflow()).toBe(0);
    await page.getByRole("button", { name: "Create key" }).waitFor({ state: "visible" });
    // The audit log's filter form and the endpoint's charts fit too.
    await page.goto(`${stack.consoleUrl}/audit`);
    expect(await overflow()).toBe(0);
    const endpoint = await stack.endpoints.createEndpoint({ merchantId, url: `${receiver.origin}/phone` });
    await stack.endpoints.sendTestEvent({ merchantId, endpointId: endpoint.endpoint!.id });
    await waitFor("the test event's attempt", async () =>
      (await stack.deliveries.summarizeDeliveries({ merchantId, endpointId: endpoint.endpoint!.id })).hours.some((hour) => hour.succeededCount > 0),
    );
    await page.goto(`${stack.consoleUrl}/webhooks/${endpoint.endpoint!.id}`);
    await page.locator("svg.chart").first().waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "endpoint-phone.png"), fullPage: true });
    expect(await overflow()).toBe(0);
    await context.close();
  });

  it("refuses another merchant's endpoint, an expired session and a revoked one", async () => {
    const foreign = await stack.endpoints.createEndpoint({ merchantId: otherMerchantId, url: `${receiver.origin}/other` });
    const { page, context, sessionId } = await signedIn();
    const response = await page.goto(`${stack.consoleUrl}/webhooks/${foreign.endpoint!.id}`);
    expect(response?.status()).toBe(404);
    expect(await page.locator("body").textContent()).not.toContain(`${receiver.origin}/other`);
    await check(page, "not-found");

    await stack.portalSessions.revokePortalSession({ merchantId, portalSessionId: sessionId });
    const revoked = await page.goto(`${stack.consoleUrl}/keys`);
    expect(revoked?.status()).toBe(401);
    await shows(page.locator("h1"), "Your session has ended");
    await check(page, "session-ended");
    await context.close();

    const expiring = await signedIn();
    await stack.admin.query("UPDATE portal_sessions SET expires_at = now() - interval '1 second', created_at = now() - interval '1 hour' WHERE id = $1", [
      expiring.sessionId,
    ]);
    const expired = await expiring.page.goto(`${stack.consoleUrl}/keys`);
    expect(expired?.status()).toBe(401);
    await expiring.context.close();

    await expect(stack.portalSessions.revokePortalSession({ merchantId: otherMerchantId, portalSessionId: sessionId })).rejects.toThrow(/not found/);
    expect(cspViolations).toEqual([]);
  });

  it("shows an error page, never a blank page or a stack trace, when a service behind the page has stopped", async () => {
    const { page, context } = await signedIn();
    const endpoint = await stack.endpoints.createEndpoint({ merchantId, url: `${receiver.origin}/down` });
    const noStackTrace = async () => {
      const text = ((await page.locator("body").textContent()) ?? "").trim();
      expect(text.length).toBeGreaterThan(0);
      expect(text).not.toMatch(/\bat .+:\d+:\d+|ConnectError|ECONNREFUSED|node:internal/);
    };

    await stack.process("webhook").stop();
    for (const path of ["/webhooks", `/webhooks/${endpoint.endpoint!.id}`]) {
      const response = await page.goto(`${stack.consoleUrl}${path}`);
      expect(response?.status()).toBe(503);
      await shows(page.locator("h1"), "Something is not answering");
      await shows(page.locator("main"), "Nothing you entered was lost");
      await noStackTrace();
    }
    await check(page, "upstream-down");
    // The screens of the services still running keep working.
    expect((await page.goto(`${stack.consoleUrl}/keys`))?.status()).toBe(200);

    await stack.process("auth").stop();
    for (const path of ["/keys", "/audit", "/audit.csv"]) {
      const response = await page.goto(`${stack.consoleUrl}${path}`);
      expect(response?.status()).toBe(503);
      expect(response?.headers()["content-type"]).toContain("text/html");
      await shows(page.locator("h1"), "Something is not answering");
      await noStackTrace();
    }
    await context.close();
  });
});
