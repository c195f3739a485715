import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "./gateway-harness.ts";

describe("audit through the gateway", () => {
  let h: GatewayHarness;
  let merchantId = "";
  let subscriptionId = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    merchantId = await h.fixtures.merchant();
    subscriptionId = (await h.fixtures.subscription({ merchantId })).id;
  });

  afterAll(async () => {
    await h?.close();
  });

  it("writes exactly one audit row per request made with a valid key, successes and 4xx alike", async () => {
    const { key, apiKeyId } = await h.createKey(merchantId);
    const responses = [
      await h.request(key, "/subscriptions?limit=5", { headers: { "user-agent": "audit-test/1" } }),
      await h.request(key, `/subscriptions/${subscriptionId}`),
      await h.request(key, "/subscriptions/sub_unknown"),
      await h.request(key, "/subscriptions?colour=blue"),
      await h.request(key, "/orders", { method: "DELETE" }),
      await h.request(key, "/orders", { method: "HEAD" }),
    ];
    // Not audited here: failed authentication goes to the auth service's security log.
    // (Another last character than the key's own: replacing an "X" with "X" would leave the key valid.)
    await h.request(`${key.slice(0, -1)}${key.endsWith("X") ? "Y" : "X"}`, "/subscriptions");

    const rows = await h.admin.query(
      `SELECT request_id, merchant_id, method, route, query, resource_ids, result_count, status, client_ip, user_agent, latency_micros
         FROM audit_events WHERE api_key_id = $1 ORDER BY occurred_at, id`,
      [apiKeyId],
    );
    expect(rows.rows.map((row) => row.request_id).sort()).toEqual(responses.map((r) => r.headers["request-id"]).sort());
    const byRequest = new Map(rows.rows.map((row) => [row.request_id, row]));
    const summary = responses.map((response) => {
      const row = byRequest.get(response.headers["request-id"])!;
      expect(row.merchant_id).toBe(merchantId);
      return [row.method, row.route, row.query, row.status, row.result_count];
    });
    expect(summary).toEqual([
      ["GET", "/v1/subscriptions", "limit=5", 200, 1],
      ["GET", "/v1/subscriptions/{id}", "", 200, 1],
      ["GET", "/v1/subscriptions/{id}", "", 404, 0],
      ["GET", "/v1/subscriptions", "colour=blue", 400, 0],
      ["DELETE", "/v1/orders", "", 405, 0],
      ["HEAD", "/v1/orders", "", 200, 0],
    ]);
    const first = byRequest.get(responses[0]!.headers["request-id"])!;
    expect(first.resource_ids).toEqual([subscriptionId]);
    expect(first.user_agent).toBe("audit-test/1");
    expect(first.client_ip).toBe("127.0.0.1");
    expect(byRequest.get(responses[2]!.headers["request-id"])!.resource_ids).toEqual(["sub_unknown"]);
  });

  it("answers 503 with no data while the audit log cannot be written, and recovers", async () => {
    const { key } = await h.createKey(merchantId);
    expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
    h.failAudit.enabled = true;
    try {
      for (const url of ["/subscriptions", `/subscriptions/${subscriptionId}`, "/orders"]) {
        const response = await h.request(key, url);
        expect(response.statusCode).toBe(503);
        expect(response.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
        expect(response.json()).toMatchObject({ code: "unavailable", status: 503 });
        expect(response.body).not.toContain('"object"');
        expect(Object.keys(response.json()).sort()).toEqual(["code", "detail", "instance", "request_id", "status", "title", "type"]);
      }
    } finally {
      h.failAudit.enabled = false;
    }
    expect((await h.request(key, "/subscriptions")).statusCode).toBe(200);
  });

  it("answers 503 with no data when the auth/audit service is gone, even for a cached key", async () => {
    const other = await startGatewayHarness();
    try {
      const { key } = await other.createKey(merchantId);
      await other.cacheLive();
      expect((await other.request(key, "/subscriptions")).statusCode).toBe(200);
      expect(other.cache.size).toBe(1);
      await other.auth.close();
      const response = await other.request(key, `/subscriptions/${subscriptionId}`);
      expect(response.statusCode).toBe(503);
      expect(response.json().code).toBe("unavailable");
      expect(response.body).not.toContain('"object"');
    } finally {
      // auth is already closed; close the rest.
      other.auth.close = async () => {};
      await other.close();
    }
  });

  it("keeps no plaintext key in the database or in any log", async () => {
    const { key } = await h.createKey(merchantId);
    await h.request(key, "/subscriptions");
    await h.request(key, "/subscriptions?bad=1");
    // (Another last character than the key's own: replacing an "X" with "X" would leave the key valid.)
    await h.request(`${key.slice(0, -1)}${key.endsWith("X") ? "Y" : "X"}`, "/subscriptions");
    for (const table of ["api_keys", "audit_events", "security_events"]) {
      const found = await h.admin.query(`SELECT count(*)::int AS n FROM ${table} t WHERE row_to_json(t)::text LIKE '%' || $1 || '%'`, [key.slice(4)]);
      expect(found.rows[0].n, table).toBe(0);
    }
    expect(h.logs.length).toBeGreaterThan(0);
    expect(h.logs.join("")).not.toContain(key.slice(4));
    expect(h.auth.logs.join("")).not.toContain(key.slice(4));
  });
});
