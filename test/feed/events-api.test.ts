import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../gateway/gateway-harness.ts";

// GET /v1/events through the real gateway, query service, auth service and Postgres.

interface FeedBody {
  object: string;
  data: Array<{ id: string; type: string; timestamp: string; data: { object: Record<string, unknown>; previous_attributes: Record<string, unknown> } }>;
  has_more: boolean;
  next_cursor: string;
}

describe("GET /v1/events", () => {
  let h: GatewayHarness;
  let merchantId = "";
  let key = "";
  let apiKeyId = "";

  beforeAll(async () => {
    h = await startGatewayHarness({ SUBDATA_FEED_MAX_WAITING_PER_KEY: "1" });
    merchantId = await h.fixtures.merchant();
    ({ key, apiKeyId } = await h.createKey(merchantId));
  });
  afterAll(async () => {
    await h?.close();
  });

  async function feed(url: string, withKey = key): Promise<FeedBody> {
    const response = await h.request(withKey, url);
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as FeedBody;
  }

  it("answers cursor=head with an empty page whose next_cursor is the end, then follows from there", async () => {
    const head = await feed("/events?cursor=head");
    expect(head).toEqual({ object: "list", data: [], has_more: false, next_cursor: expect.any(String) });

    const subscription = await h.fixtures.subscription({ merchantId });
    const chargeId = await h.fixtures.charge({ merchantId, subscriptionId: subscription.id });
    await h.admin.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE id = $1", [subscription.id]);

    const page = await feed(`/events?cursor=${encodeURIComponent(head.next_cursor)}`);
    expect(page.data.map((event) => event.type)).toEqual(["subscription.created", "charge.created", "subscription.updated"]);
    expect(page.has_more).toBe(false);
    const [created, charge, updated] = page.data;
    expect(created!.id).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(created!.data.object).toMatchObject({ id: subscription.id, object: "subscription", version: 1 });
    expect(created!.data.previous_attributes).toEqual({});
    expect(charge!.data.object).toMatchObject({ id: chargeId, object: "charge", subscription_id: subscription.id, version: 1 });
    // version is the event's own sequence, not reported as a changed attribute.
    expect(updated!.data.previous_attributes).toEqual({ status: "ACTIVE", paused_at: null, updated_at: expect.any(String) });
    expect(updated!.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    // Nothing new: an empty page that keeps the position.
    const after = await feed(`/events?cursor=${encodeURIComponent(page.next_cursor)}`);
    expect(after.data).toEqual([]);
    expect(after.next_cursor).toBe(page.next_cursor);
  });

  it("pages with limit, without skipping or repeating, and filters by types", async () => {
    const start = (await feed("/events?cursor=head")).next_cursor;
    const typedStart = (await feed("/events?cursor=head&types=order.created,order.deleted")).next_cursor;
    const subscription = await h.fixtures.subscription({ merchantId });
    for (let i = 0; i < 5; i++) await h.admin.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [subscription.id]);
    await h.fixtures.order({ merchantId, subscriptionId: subscription.id });

    const seen: string[] = [];
    let cursor = start;
    for (;;) {
      const page = await feed(`/events?limit=2&cursor=${encodeURIComponent(cursor)}`);
      seen.push(...page.data.map((event) => `${event.type}@${event.data.object.version}`));
      cursor = page.next_cursor;
      if (!page.has_more) break;
      expect(page.data).toHaveLength(2);
    }
    expect(seen).toEqual(["subscription.created@1", ...[2, 3, 4, 5, 6].map((version) => `subscription.updated@${version}`), "order.created@1"]);

    // A cursor is bound to its types: a typed walk starts from a typed head.
    const unbound = await h.request(key, `/events?types=order.created&cursor=${encodeURIComponent(start)}`);
    expect(unbound.json().code).toBe("invalid_cursor");
    const orders = await feed(`/events?types=order.created,order.deleted&cursor=${encodeURIComponent(typedStart)}`);
    expect(orders.data.map((event) => event.type)).toEqual(["order.created"]);
    // The filter's spelling does not matter: the same set, in another order, takes the same cursor.
    expect((await h.request(key, `/events?types=order.deleted,order.created&cursor=${encodeURIComponent(typedStart)}`)).statusCode).toBe(200);
    // The same cursor with other types is refused: cursors are bound to the filter.
    const rebound = await h.request(key, `/events?types=order.deleted&cursor=${encodeURIComponent(orders.next_cursor)}`);
    expect(rebound.statusCode).toBe(400);
    expect(rebound.json().code).toBe("invalid_cursor");
  });

  it("refuses bad parameters with RFC 9457 problems naming them", async () => {
    for (const [query, param] of [
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["wait=31", "wait"],
      ["wait=-1", "wait"],
      ["types=subscription.created,nope", "types"],
      ["types=", "types"],
      ["status=ACTIVE", "status"],
    ] as const) {
      const response = await h.request(key, `/events?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(
        response.json().errors.map((error: { param: string }) => error.param),
        query,
      ).toContain(param);
    }
    const tampered = await h.request(key, "/events?cursor=bm90LWEtY3Vyc29y.AAAA");
    expect(tampered.json().code).toBe("invalid_cursor");
  });

  it("refuses another merchant's cursor exactly like a tampered one", async () => {
    const other = await h.fixtures.merchant();
    const { key: otherKey } = await h.createKey(other);
    const theirs = (await feed("/events?cursor=head", otherKey)).next_cursor;
    const response = await h.request(key, `/events?cursor=${encodeURIComponent(theirs)}`);
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe("invalid_cursor");
  });

  it("holds an empty page open until a change commits, then answers with it", async () => {
    const subscription = await h.fixtures.subscription({ merchantId });
    const cursor = (await feed("/events?cursor=head")).next_cursor;
    // Promise.resolve dispatches the injected request now (light-my-request starts it on then()).
    const waiting = Promise.resolve(h.request(key, `/events?wait=20&cursor=${encodeURIComponent(cursor)}`));
    // The read is held, not answered: the one waiting slot of this key is taken, so a second waits is refused.
    let second = await h.request(key, `/events?wait=1&cursor=${encodeURIComponent(cursor)}`);
    for (let tries = 0; second.statusCode === 200 && tries < 50; tries++) {
      second = await h.request(key, `/events?wait=1&cursor=${encodeURIComponent(cursor)}`);
    }
    expect(second.statusCode).toBe(429);
    expect(second.json().code).toBe("rate_limited");
    expect(second.headers["retry-after"]).toBe("1");

    await h.admin.query("UPDATE subscriptions SET quantity = 42 WHERE id = $1", [subscription.id]);
    const response = await waiting;
    expect(response.statusCode).toBe(200);
    const page = response.json() as FeedBody;
    expect(page.data.map((event) => [event.type, event.data.object.quantity])).toEqual([["subscription.updated", 42]]);
  });

  it("ends a long poll whose client hung up, so the key's waiting slot is free at once", async () => {
    await h.gateway.listen({ host: "127.0.0.1", port: 0 });
    const address = h.gateway.server.address();
    if (!address || typeof address === "string") throw new Error("the gateway is not listening on TCP");
    const { key: followerKey } = await h.createKey(merchantId);
    const cursor = (await feed("/events?cursor=head", followerKey)).next_cursor;
    const url = `http://127.0.0.1:${address.port}/api/v1/events?wait=25&cursor=${encodeURIComponent(cursor)}`;
    const probe = () => h.request(followerKey, `/events?wait=1&cursor=${encodeURIComponent(cursor)}`);

    // Until the follower over a real socket holds the key's only waiting slot (a probe may take it first).
    let hangUp = new AbortController();
    let abandoned: Promise<unknown> = Promise.resolve();
    for (let tries = 0; tries < 20; tries++) {
      hangUp = new AbortController();
      abandoned = fetch(url, { headers: { authorization: `Bearer ${followerKey}` }, signal: hangUp.signal }).catch((error: Error) => error);
      // The socket request needs a connection first; give it a head start (the loop covers a lost race).
      await new Promise((resolve) => setTimeout(resolve, 100 * (tries + 1)));
      if ((await probe()).statusCode === 429) break;
      hangUp.abort();
      await abandoned;
    }
    expect((await probe()).statusCode).toBe(429);

    hangUp.abort();
    expect(await abandoned).toBeInstanceOf(Error);
    // Freed without waiting out its 25 s: a new long poll of the key is admitted (it waits 1 s and answers 200).
    let next = await probe();
    for (let tries = 0; next.statusCode === 429 && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      next = await probe();
    }
    expect(next.statusCode).toBe(200);
  });

  it("answers an empty page with the same cursor when the wait ends without a change", async () => {
    const cursor = (await feed("/events?cursor=head")).next_cursor;
    const page = await feed(`/events?wait=1&cursor=${encodeURIComponent(cursor)}`);
    expect(page).toEqual({ object: "list", data: [], has_more: false, next_cursor: cursor });
  });

  it("answers 410 cursor_expired for a cursor older than what retention removed", async () => {
    const owner = await h.fixtures.merchant();
    const { key: ownerKey } = await h.createKey(owner);
    const old = (await feed("/events?cursor=head", ownerKey)).next_cursor;
    const subscription = await h.fixtures.subscription({ merchantId: owner });
    await h.admin.query("UPDATE change_commits SET committed_at = now() - interval '40 days' WHERE merchant_id = $1", [owner]);
    await h.admin.query("UPDATE subscriptions SET quantity = 2 WHERE id = $1", [subscription.id]);
    const purged = await h.admin.query("SELECT subdata_purge_change_events(interval '30 days', 1000) AS purged");
    expect(purged.rows[0].purged).toBeGreaterThanOrEqual(1);

    const expired = await h.request(ownerKey, `/events?cursor=${encodeURIComponent(old)}`);
    expect(expired.statusCode).toBe(410);
    expect(expired.json()).toMatchObject({ code: "cursor_expired", status: 410 });
    // Starting again from the oldest retained event still works, and shows only what is left.
    const rest = await feed("/events", ownerKey);
    expect(rest.data.map((event) => event.type)).toEqual(["subscription.updated"]);
    await expect(h.admin.query("SELECT subdata_purge_change_events(interval '29 days', 10)")).rejects.toThrow(/at least 30 days/);
  });

  it("records every feed read in the audit log before answering", async () => {
    const response = await h.request(key, "/events?cursor=head");
    const rows = await h.admin.query("SELECT route, status, query FROM audit_events WHERE request_id = $1 AND api_key_id = $2", [
      response.headers["request-id"],
      apiKeyId,
    ]);
    expect(rows.rows).toEqual([{ route: "/v1/events", status: 200, query: "cursor=head" }]);
  });
});

describe("GET /v1/charges", () => {
  let h: GatewayHarness;

  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("walks a merchant's charges by keyset, optionally for one subscription, never another merchant's", async () => {
    const merchantId = await h.fixtures.merchant();
    const other = await h.fixtures.merchant();
    const { key } = await h.createKey(merchantId);
    const first = await h.fixtures.subscription({ merchantId });
    const second = await h.fixtures.subscription({ merchantId });
    const foreign = await h.fixtures.subscription({ merchantId: other });
    const charges = [];
    for (const subscription of [first, second, first]) charges.push(await h.fixtures.charge({ merchantId, subscriptionId: subscription.id }));
    await h.fixtures.charge({ merchantId: other, subscriptionId: foreign.id });

    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const response = await h.request(key, `/charges?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(response.statusCode).toBe(200);
      const page = response.json();
      ids.push(...page.data.map((charge: { id: string }) => charge.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(ids).toEqual(charges);

    const filtered = (await h.request(key, `/charges?subscription_id=${first.id}`)).json();
    expect(filtered.data.map((charge: { id: string; subscription_id: string }) => [charge.id, charge.subscription_id])).toEqual([
      [charges[0], first.id],
      [charges[2], first.id],
    ]);
    expect((await h.request(key, `/charges?subscription_id=${foreign.id}`)).json().data).toEqual([]);
  });
});
