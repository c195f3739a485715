import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "./gateway-harness.ts";

/** Postgres text for a time `seconds` (with microseconds) after a fixed base. */
function at(seconds: number, micros = 0): string {
  const base = Date.UTC(2026, 0, 1);
  const whole = new Date(base + Math.floor(seconds) * 1000).toISOString().slice(0, 19).replace("T", " ");
  return `${whole}.${String(micros).padStart(6, "0")}+00`;
}

describe("a page walk through the gateway", () => {
  let h: GatewayHarness;
  let merchantId = "";
  let customerId = "";
  let planId = "";
  let key = "";

  beforeAll(async () => {
    h = await startGatewayHarness();
    merchantId = await h.fixtures.merchant();
    customerId = await h.fixtures.customer(merchantId);
    planId = await h.fixtures.plan(merchantId);
    ({ key } = await h.createKey(merchantId));
  });

  afterAll(async () => {
    await h?.close();
  });

  const insert = (status: "ACTIVE" | "PAUSED", createdAt: string) =>
    h.fixtures.subscription({ merchantId, customerId, planId, status, createdAt }).then((row) => row.id);

  it("returns every row that matched throughout exactly once, whatever is inserted, deleted or changed meanwhile", async () => {
    const stable: string[] = [];
    const volatile: string[] = [];
    for (let i = 0; i < 60; i++) {
      // Groups of three share a timestamp to the microsecond: the id breaks the tie.
      stable.push(await insert("ACTIVE", at(Math.floor(i / 3), 1)));
      if (i % 2 === 0) volatile.push(await insert("ACTIVE", at(Math.floor(i / 3), i % 4 === 0 ? 1 : 500_000)));
    }
    // A row of another status never appears in an ACTIVE walk.
    const paused = await insert("PAUSED", at(5, 1));

    let churnStep = 0;
    const churn = async () => {
      churnStep++;
      // Inserts before, inside and after the part already read (same timestamps as existing rows too).
      await insert("ACTIVE", at(churnStep % 20, 1));
      await insert("ACTIVE", at(25 + churnStep, 0));
      const victim = volatile.shift();
      if (victim) await h.admin.query("DELETE FROM subscriptions WHERE id = $1", [victim]);
      const changed = volatile.shift();
      if (changed) await h.admin.query("UPDATE subscriptions SET status = 'PAST_DUE' WHERE id = $1", [changed]);
      // A change that keeps the row matching.
      await h.admin.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE id = $1", [stable[(churnStep * 7) % stable.length]]);
    };

    let walking = true;
    const background = (async () => {
      while (walking) await churn();
    })();

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    try {
      do {
        const url: string = `/subscriptions?status=ACTIVE&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
        const response = await h.request(key, url);
        expect(response.statusCode, response.body).toBe(200);
        const body = response.json();
        expect(body.has_more).toBe(body.next_cursor !== null);
        for (const subscription of body.data) {
          expect(subscription.status).toBe("ACTIVE");
          seen.push(subscription.id);
        }
        cursor = body.next_cursor;
        pages++;
        await churn();
      } while (cursor !== null);
    } finally {
      walking = false;
      await background;
    }

    expect(pages).toBeGreaterThan(8);
    expect(new Set(seen).size).toBe(seen.length);
    const seenSet = new Set(seen);
    expect(stable.filter((id) => !seenSet.has(id))).toEqual([]);
    expect(seenSet.has(paused)).toBe(false);
  });

  it("refuses a cursor used with another filter with 400 invalid_cursor", async () => {
    await insert("ACTIVE", at(100));
    await insert("ACTIVE", at(101));
    const first = (await h.request(key, "/subscriptions?status=ACTIVE&limit=1")).json();
    expect(first.next_cursor).not.toBeNull();
    const other = await h.request(key, `/subscriptions?status=PAUSED&limit=1&cursor=${encodeURIComponent(first.next_cursor)}`);
    expect(other.statusCode).toBe(400);
    expect(other.json()).toMatchObject({ code: "invalid_cursor", type: "https://subdata.dev/problems/invalid_cursor" });
    const tampered = await h.request(key, `/subscriptions?status=ACTIVE&limit=1&cursor=${encodeURIComponent(`${first.next_cursor}x`)}`);
    expect(tampered.json().code).toBe("invalid_cursor");
  });
});
