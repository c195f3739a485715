import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ensureEventStream, type PurgedTable } from "@subdata/relay";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { startTestRelay, type TestRelay } from "./relay-harness.ts";
import { createMerchant, createSubscription, deleteStream, waitFor } from "./support.ts";

// The relay's purge: published outbox rows past SUBDATA_RELAY_RETENTION_DAYS, and the change feed's
// commits past SUBDATA_FEED_RETENTION_DAYS, each merchant's horizon moving past what went (a cursor
// from before it then answers 410). Commits are made old by backdating committed_at.
describe("the relay's retention purge", () => {
  const runId = inject("runId");
  const stream = { stream: `T_${runId}_retention`, subjectPrefix: `t.${runId}.retention`, replicas: 1 };
  let database: TestDatabase;
  let admin: pg.Pool;
  let nc: NatsConnection;
  const relays: TestRelay[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: inject("natsUrl") });
    await ensureEventStream(nc, stream);
  });
  beforeEach(async () => {
    database = await createTestDatabase("retention");
    admin = new pg.Pool({ connectionString: database.adminUrl, max: 4 });
  });
  afterEach(async () => {
    for (const relay of relays.splice(0)) await relay.close();
    await admin.end();
    await database.drop();
  });
  afterAll(async () => {
    await deleteStream(nc, stream.stream);
    await nc.drain();
  });

  /** A merchant's commits, oldest first. */
  async function commitsOf(merchantId: string): Promise<Array<{ position: string; xid: string }>> {
    const { rows } = await admin.query("SELECT position::text, xid::text FROM change_commits WHERE merchant_id = $1 ORDER BY position", [merchantId]);
    return rows;
  }

  async function backdate(merchantId: string, positions: string[], days: number): Promise<void> {
    await admin.query(`UPDATE change_commits SET committed_at = now() - make_interval(days => $3) WHERE merchant_id = $1 AND position = ANY ($2::bigint[])`, [
      merchantId,
      positions,
      days,
    ]);
  }

  it("removes expired commits with their events, in batches until one comes back short, and advances each merchant's horizon", async () => {
    const a = await createMerchant(admin, "retention a");
    const b = await createMerchant(admin, "retention b");
    const subscriptionId = await createSubscription(admin, a);
    for (let quantity = 2; quantity <= 5; quantity++) await admin.query("UPDATE subscriptions SET quantity = $2 WHERE id = $1", [subscriptionId, quantity]);
    await createSubscription(admin, b);
    const commitsA = await commitsOf(a.merchantId);
    const commitsB = await commitsOf(b.merchantId);
    expect(commitsA).toHaveLength(5);
    // A's first four commits are past the feed's retention, its fifth is not; B's only one is.
    await backdate(
      a.merchantId,
      commitsA.slice(0, 4).map((commit) => commit.position),
      31,
    );
    await backdate(b.merchantId, [commitsB[0]!.position], 400);
    // Every outbox row was published long enough ago to go as well.
    await admin.query("UPDATE event_outbox SET published_at = now() - interval '8 days'");

    const purges: Array<[PurgedTable, number]> = [];
    const running = startTestRelay({
      databaseUrl: database.roleUrls.webhook,
      nc,
      stream,
      retention: { outboxDays: 7, feedDays: 30, everyMs: 60 * 60 * 1000, outboxBatch: 4, feedBatch: 2 },
      onPurge: (table, count) => void purges.push([table, count]),
    });
    relays.push(running);
    const { relay } = running;

    expect(await relay.purge()).toEqual({ outboxRows: 6, feedCommits: 5 });
    expect(purges).toEqual([
      ["event_outbox", 4],
      ["event_outbox", 2],
      ["change_commits", 2],
      ["change_commits", 2],
      ["change_commits", 1],
    ]);
    expect(await commitsOf(a.merchantId)).toEqual([commitsA[4]]);
    expect(await commitsOf(b.merchantId)).toEqual([]);
    const events = await admin.query<{ merchant_id: string; xid: string }>("SELECT merchant_id, xid::text FROM change_events ORDER BY seq");
    expect(events.rows).toEqual([{ merchant_id: a.merchantId, xid: commitsA[4]!.xid }]);
    const horizons = await admin.query("SELECT merchant_id, purged_through::text FROM change_feed_horizons ORDER BY purged_through");
    expect(horizons.rows).toEqual(
      [
        { merchant_id: a.merchantId, purged_through: commitsA[3]!.position },
        { merchant_id: b.merchantId, purged_through: commitsB[0]!.position },
      ].sort((x, y) => Number(x.purged_through) - Number(y.purged_through)),
    );
    // Nothing more to do: one short batch each.
    purges.length = 0;
    expect(await relay.purge()).toEqual({ outboxRows: 0, feedCommits: 0 });
    expect(purges).toEqual([
      ["event_outbox", 0],
      ["change_commits", 0],
    ]);
  });

  it("purges on its own once started, and never an event younger than the retention", async () => {
    const a = await createMerchant(admin, "retention loop");
    const subscriptionId = await createSubscription(admin, a);
    await admin.query("UPDATE subscriptions SET quantity = 2 WHERE id = $1", [subscriptionId]);
    const [old, young] = await commitsOf(a.merchantId);
    await backdate(a.merchantId, [old!.position], 401);
    await backdate(a.merchantId, [young!.position], 399);
    const running = startTestRelay({
      databaseUrl: database.roleUrls.webhook,
      nc,
      stream,
      retention: { outboxDays: 7, feedDays: 400, everyMs: 60 * 60 * 1000 },
    });
    relays.push(running);
    running.relay.start();
    await waitFor("the expired commit purged", async () => (await commitsOf(a.merchantId)).length === 1);
    expect(await commitsOf(a.merchantId)).toEqual([young]);
  });
});
