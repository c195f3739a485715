import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayHarness, pollUntil, startGatewayHarness } from "./gateway-harness.ts";

/**
 * The gateway's audit queue is bounded in size and in time: with the audit log blocked in Postgres (a
 * lock that holds the auth service's INSERT), reads answer 503 with no data — those beyond the queue's
 * bound at once, the rest at their deadline — before the auth service gives up, and the
 * gateway serves again as soon as the audit log is writable.
 */
describe("the gateway's audit queue when the audit log is blocked", () => {
  let h: GatewayHarness;
  let merchantId = "";

  beforeAll(async () => {
    h = await startGatewayHarness({ SUBDATA_AUDIT_QUEUE_MAX: "4", SUBDATA_AUDIT_QUEUE_WAIT_MS: "2000", SUBDATA_UPSTREAM_TIMEOUT_MS: "30000" });
    merchantId = await h.fixtures.merchant();
    await h.fixtures.subscription({ merchantId });
  });

  afterAll(async () => {
    await h?.close();
  });

  it("answers 503 with Retry-After and no data when the queue is full or a read waits past its deadline, then serves again", async () => {
    const { key } = await h.createKey(merchantId);
    expect((await h.request(key, "/subscriptions?limit=1")).statusCode).toBe(200);

    // The audit table locked against inserts: the auth service's next INSERT waits on the lock.
    const blocker = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
    await blocker.connect();
    let released = false;
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE audit_events IN SHARE MODE");
      const first = h.request(key, "/subscriptions?limit=1");
      await pollUntil(async () => {
        const { rows } = await h.admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO audit_events%'",
        );
        return rows[0]!.n > 0;
      }, "the auth service's INSERT to wait on the lock");
      // One RecordReads call is in flight and stuck; these ten queue behind it, four at most.
      const rest = Array.from({ length: 10 }, () => h.request(key, "/subscriptions?limit=1"));
      const responses = await Promise.all([first, ...rest]);
      for (const response of responses) {
        expect(response.statusCode).toBe(503);
        expect(response.headers["retry-after"]).toBe("1");
        expect(response.headers["content-type"]).toMatch(/^application\/problem\+json/);
        const body = JSON.parse(response.body) as Record<string, unknown>;
        expect(body).toMatchObject({ code: "unavailable", status: 503 });
        expect(body).not.toHaveProperty("data");
      }
      const refused = (await h.metrics.getSingleMetric("subdata_gateway_audit_refused_total")!.get()).values;
      const countOf = (reason: string) => refused.find((value) => value.labels.reason === reason)?.value;
      // Refused by the bounds, not by the auth service giving up (its statement timeout is 5 s, the deadline
      // 2 s): six on arrival (the queue held four), five at their deadline (the one in flight and the four queued).
      expect(countOf("queue_full")).toBe(6);
      expect(countOf("deadline")).toBe(5);
      expect(countOf("failed")).toBe(0);
      // Eleven refusals within seconds, one line: the first, on arrival; the rest are summed up later.
      const logged = h.logs.filter((line) => line.includes("audit record failed; answering 503"));
      expect(logged.map((line) => (JSON.parse(line) as { reason: string }).reason)).toEqual(["queue_full"]);

      await blocker.query("ROLLBACK");
      released = true;
    } finally {
      if (!released) await blocker.query("ROLLBACK").catch(() => {});
      await blocker.end();
    }
    // The stuck call finishes once the lock is gone; then reads are served and audited again.
    await pollUntil(async () => (await h.request(key, "/subscriptions?limit=1")).statusCode === 200, "a read to be served again", 30_000);
  });
});
