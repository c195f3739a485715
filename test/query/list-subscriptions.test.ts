import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import { SubscriptionStatus } from "@subdata/proto/subdata/subscription/v1/subscription_pb";
import { type ListSubscriptionsRequestSchema, ListSubscriptionsResponseSchema } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { errorDetailOf } from "@subdata/runtime";
import { beforeAll, describe, expect, it } from "vitest";
import { useQueryHarness } from "../support/query-server.ts";
import { expectEveryMoneyHasCurrency, rpcError } from "./assertions.ts";

type ListInit = MessageInitShape<typeof ListSubscriptionsRequestSchema>;

describe("ListSubscriptions", () => {
  const harness = useQueryHarness();

  /** Every page of a walk, with `between` run after each page (to change data mid-walk). */
  async function walk(init: ListInit, between: (pageIndex: number) => Promise<void> = async () => {}) {
    const ids: string[] = [];
    let pageToken = "";
    for (let pageIndex = 0; pageIndex < 200; pageIndex++) {
      const page = await harness.query.subscriptions.listSubscriptions({ ...init, pageToken });
      expect(page.subscriptions.length).toBeLessThanOrEqual(init.pageSize || 50);
      for (const subscription of page.subscriptions) {
        expect(subscription.merchantId).toBe(init.merchantId);
        ids.push(subscription.id);
      }
      if (page.nextPageToken === "") return ids;
      // A page that promises more is full.
      expect(page.subscriptions).toHaveLength(init.pageSize || 50);
      pageToken = page.nextPageToken;
      await between(pageIndex);
    }
    throw new Error("walk did not end");
  }

  /** The merchant's ids in keyset order, as Postgres sorts them. */
  async function idsInKeysetOrder(merchantId: string, status?: string): Promise<string[]> {
    const result = await harness.admin.query(
      "SELECT id FROM subscriptions WHERE merchant_id = $1 AND ($2::subscription_status IS NULL OR status = $2) ORDER BY created_at, id",
      [merchantId, status ?? null],
    );
    return result.rows.map((row) => row.id as string);
  }

  it("returns rows that share a created_at microsecond, or differ by one, neither skipped nor repeated", async () => {
    const merchantId = await harness.fixtures.merchant();
    const customerId = await harness.fixtures.customer(merchantId);
    const planId = await harness.fixtures.plan(merchantId);
    const base = { merchantId, customerId, planId };
    for (let i = 0; i < 11; i++) await harness.fixtures.subscription({ ...base, createdAt: "2026-03-01 10:00:00.000500+00" });
    // Same millisecond, one microsecond apart: a Date-based cursor would merge them.
    for (let i = 0; i < 6; i++) await harness.fixtures.subscription({ ...base, createdAt: `2026-03-01 10:00:00.00050${i}+00` });

    const expected = await idsInKeysetOrder(merchantId);
    expect(expected).toHaveLength(17);
    for (const pageSize of [1, 3, 5, 7, 16, 17]) {
      expect(await walk({ merchantId, pageSize })).toEqual(expected);
    }
  });

  it("returns every row that matched throughout a walk exactly once while rows are inserted, deleted and change status", async () => {
    const merchantId = await harness.fixtures.merchant();
    const customerId = await harness.fixtures.customer(merchantId);
    const planId = await harness.fixtures.plan(merchantId);
    const base = { merchantId, customerId, planId };
    const statuses = ["ACTIVE", "PAUSED", "ACTIVE", "CANCELLED"] as const;
    const created: Array<{ id: string; status: string }> = [];
    for (let i = 0; i < 48; i++) {
      const status = statuses[i % statuses.length]!;
      // Groups of four share a microsecond, so page boundaries fall inside ties.
      const micros = String(Math.floor(i / 4)).padStart(6, "0");
      const row = await harness.fixtures.subscription({ ...base, status, createdAt: `2026-04-01 00:00:00.${micros}+00` });
      created.push({ id: row.id, status });
    }
    // Every third row is changed during the walks; the rest are left alone.
    const volatile = created.filter((_, i) => i % 3 === 0);
    const stable = created.filter((_, i) => i % 3 !== 0);

    const mutate = async (step: number) => {
      // Alternately a row ahead of the cursor and one already returned; deleted or flipped in turn.
      const target = step % 2 === 0 ? volatile.pop() : volatile.shift();
      if (target !== undefined) {
        if (Math.floor(step / 2) % 2 === 0) {
          await harness.admin.query("DELETE FROM subscriptions WHERE id = $1", [target.id]);
        } else {
          await harness.admin.query(
            "UPDATE subscriptions SET status = CASE WHEN status = 'ACTIVE' THEN 'PAUSED' ELSE 'ACTIVE' END::subscription_status WHERE id = $1",
            [target.id],
          );
        }
      }
      // New rows: one inside the fixed tie groups (before or after the cursor), one created now.
      await harness.fixtures.subscription({ ...base, status: "ACTIVE", createdAt: "2026-04-01 00:00:00.000005+00" });
      await harness.fixtures.subscription({ ...base, status: "ACTIVE" });
    };

    const everything = await walk({ merchantId, pageSize: 7 }, mutate);
    expect(new Set(everything).size).toBe(everything.length);
    expect(everything).toEqual(expect.arrayContaining(stable.map((row) => row.id)));

    const active = await walk({ merchantId, pageSize: 7, status: SubscriptionStatus.ACTIVE }, mutate);
    expect(new Set(active).size).toBe(active.length);
    expect(active).toEqual(expect.arrayContaining(stable.filter((row) => row.status === "ACTIVE").map((row) => row.id)));
    // Only ACTIVE rows, in keyset order (a subsequence of the merchant's current order plus deleted rows).
    const nowActive = new Set(await idsInKeysetOrder(merchantId, "ACTIVE"));
    const stableIds = new Set(stable.map((row) => row.id));
    for (const id of active) if (stableIds.has(id)) expect(nowActive.has(id)).toBe(true);
  });

  it("filters by status, and UNSPECIFIED lists every status", async () => {
    const merchantId = await harness.fixtures.merchant();
    const paused = await harness.fixtures.subscription({ merchantId, status: "PAUSED" });
    const trialing = await harness.fixtures.subscription({ merchantId, status: "TRIALING" });
    const onlyPaused = await harness.query.subscriptions.listSubscriptions({ merchantId, status: SubscriptionStatus.PAUSED });
    expect(onlyPaused.subscriptions.map((s) => s.id)).toEqual([paused.id]);
    expect(onlyPaused.subscriptions[0]!.status).toBe(SubscriptionStatus.PAUSED);
    expect(onlyPaused.nextPageToken).toBe("");
    const all = await harness.query.subscriptions.listSubscriptions({ merchantId });
    expect(all.subscriptions.map((s) => s.id).sort()).toEqual([paused.id, trialing.id].sort());
  });

  it("never lists another merchant's subscriptions", async () => {
    const mine = await harness.fixtures.merchant();
    const theirs = await harness.fixtures.merchant();
    const own = await harness.fixtures.subscription({ merchantId: mine });
    await harness.fixtures.subscription({ merchantId: theirs });
    const page = await harness.query.subscriptions.listSubscriptions({ merchantId: mine });
    expect(page.subscriptions.map((s) => s.id)).toEqual([own.id]);
    const unknown = await harness.query.subscriptions.listSubscriptions({ merchantId: "mer_doesnotexist" });
    expect(unknown.subscriptions).toEqual([]);
    expect(unknown.nextPageToken).toBe("");
  });

  it("maps every column, with exact microseconds and the customer and plan", async () => {
    const merchantId = await harness.fixtures.merchant();
    const customerId = await harness.fixtures.customer(merchantId, { email: "ada@example.com", name: "Ada" });
    const planId = await harness.fixtures.plan(merchantId, { name: "Quarterly box", interval: "MONTH", intervalCount: 3 });
    const row = await harness.fixtures.subscription({
      merchantId,
      customerId,
      planId,
      status: "CANCELLED",
      priceMinor: 4500,
      quantity: 2,
      createdAt: "2026-05-06 07:08:09.123456+00",
      currentPeriodStart: "2026-05-06 07:08:09.123456+00",
      currentPeriodEnd: "2026-08-06 07:08:09.123456+00",
      nextChargeAt: null,
      cancelledAt: "2026-06-01 00:00:00.000001+00",
      cancellationReason: "too many boxes",
    });
    const [subscription] = (await harness.query.subscriptions.listSubscriptions({ merchantId })).subscriptions;
    expect(subscription).toMatchObject({
      id: row.id,
      merchantId,
      status: SubscriptionStatus.CANCELLED,
      customer: { id: customerId, email: "ada@example.com", name: "Ada" },
      plan: { id: planId, name: "Quarterly box", intervalCount: 3 },
      price: { amountMinor: 4500n, currencyCode: "USD" },
      quantity: 2,
      cancellationReason: "too many boxes",
      version: 1n,
    });
    expect(subscription!.createdAt).toMatchObject({ nanos: 123_456_000 });
    expect(subscription!.cancelledAt).toMatchObject({ nanos: 1_000 });
    expect(subscription!.nextChargeAt).toBeUndefined();
    expect(subscription!.trialEndsAt).toBeUndefined();
    expect(subscription!.pausedAt).toBeUndefined();
  });

  it("returns JPY and KWD prices with their currency and exact minor units, and every Money has a currency", async () => {
    const merchantId = await harness.fixtures.merchant();
    await harness.fixtures.subscription({ merchantId, priceMinor: 1500, currency: "JPY", createdAt: "2026-01-01 00:00:00+00" });
    await harness.fixtures.subscription({ merchantId, priceMinor: 1250, currency: "KWD", createdAt: "2026-01-01 00:00:01+00" });
    // Beyond a double's exact range: must not be rounded anywhere on the way.
    await harness.fixtures.subscription({ merchantId, priceMinor: 9007199254740993n, currency: "USD", createdAt: "2026-01-01 00:00:02+00" });
    const page = await harness.query.subscriptions.listSubscriptions({ merchantId });
    expect(page.subscriptions.map((s) => s.price)).toMatchObject([
      { amountMinor: 1500n, currencyCode: "JPY" },
      { amountMinor: 1250n, currencyCode: "KWD" },
      { amountMinor: 9007199254740993n, currencyCode: "USD" },
    ]);
    expect(expectEveryMoneyHasCurrency(ListSubscriptionsResponseSchema, page)).toBe(3);
  });

  describe("page tokens", () => {
    let merchantId = "";
    let otherMerchantId = "";
    let token = "";

    beforeAll(async () => {
      merchantId = await harness.fixtures.merchant();
      otherMerchantId = await harness.fixtures.merchant();
      for (let i = 0; i < 3; i++) await harness.fixtures.subscription({ merchantId, status: "ACTIVE" });
      for (let i = 0; i < 3; i++) await harness.fixtures.subscription({ merchantId: otherMerchantId, status: "ACTIVE" });
      const first = await harness.query.subscriptions.listSubscriptions({ merchantId, pageSize: 1, status: SubscriptionStatus.ACTIVE });
      token = first.nextPageToken;
      expect(token).not.toBe("");
    });

    const refusals: Array<[string, () => ListInit]> = [
      ["was tampered with", () => ({ merchantId, status: SubscriptionStatus.ACTIVE, pageToken: tamper(token) })],
      ["is not a token at all", () => ({ merchantId, status: SubscriptionStatus.ACTIVE, pageToken: "garbage" })],
      ["was made for another status", () => ({ merchantId, status: SubscriptionStatus.PAUSED, pageToken: token })],
      ["was made for a status and is used for all", () => ({ merchantId, pageToken: token })],
      ["was made for another merchant", () => ({ merchantId: otherMerchantId, status: SubscriptionStatus.ACTIVE, pageToken: token })],
    ];

    it.each(refusals)("when the token %s, the list answers INVALID_ARGUMENT with reason INVALID_PAGE_TOKEN", async (_, request) => {
      const error = await rpcError(harness.query.subscriptions.listSubscriptions({ pageSize: 1, ...request() }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
    });

    it("accepts the token with the same merchant and filter, whatever the page size", async () => {
      const next = await harness.query.subscriptions.listSubscriptions({ merchantId, status: SubscriptionStatus.ACTIVE, pageSize: 5, pageToken: token });
      expect(next.subscriptions).toHaveLength(2);
      expect(next.nextPageToken).toBe("");
    });
  });

  it.each<[string, ListInit]>([
    ["merchant_id", { merchantId: "" }],
    ["page_size", { pageSize: 201 }],
    ["page_size", { pageSize: -1 }],
    ["status", { status: 99 as SubscriptionStatus }],
  ])("refuses a bad %s with INVALID_ARGUMENT naming the field", async (field, request) => {
    const error = await rpcError(harness.query.subscriptions.listSubscriptions({ merchantId: "mer_x", ...request }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(errorDetailOf(error)).toMatchObject({ reason: ErrorReason.INVALID_ARGUMENT, fieldViolations: [{ field }] });
  });

  it("answers 50 rows for page_size 0 and up to 200 when asked", async () => {
    const merchantId = await harness.fixtures.merchant();
    const customerId = await harness.fixtures.customer(merchantId);
    const planId = await harness.fixtures.plan(merchantId);
    await harness.admin.query(
      `INSERT INTO subscriptions (merchant_id, customer_id, plan_id, status, price_minor, currency, current_period_start, current_period_end)
       SELECT $1, $2, $3, 'ACTIVE', 100, 'USD', now(), now() + interval '1 month' FROM generate_series(1, 201)`,
      [merchantId, customerId, planId],
    );
    expect((await harness.query.subscriptions.listSubscriptions({ merchantId })).subscriptions).toHaveLength(50);
    const largest = await harness.query.subscriptions.listSubscriptions({ merchantId, pageSize: 200 });
    expect(largest.subscriptions).toHaveLength(200);
    const rest = await harness.query.subscriptions.listSubscriptions({ merchantId, pageSize: 200, pageToken: largest.nextPageToken });
    expect(rest.subscriptions).toHaveLength(1);
    expect(rest.nextPageToken).toBe("");
  });
});

/** Flips one character of the token's payload, keeping it well-formed base64url. */
function tamper(token: string): string {
  const index = Math.floor(token.indexOf(".") / 2);
  const replacement = token[index] === "A" ? "B" : "A";
  return token.slice(0, index) + replacement + token.slice(index + 1);
}
