import { commitWatchStatements, createCommitWatchPool, createCommitWatcher, type CommitWatcherOptions } from "@subdata/events";
import { createLogger, type Pool, Registry } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type PlanNode, scans } from "../support/plan-scans.ts";
import { recordingQueryable } from "../support/recording-queryable.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { createMerchant, createSubscription } from "../relay/support.ts";

/**
 * The commit watcher against real commits. Positions are drawn at commit, so a position that is drawn
 * but not yet visible is made here by hand: a transaction that takes the next position and writes its
 * change_commits row, as the commit trigger does, and stays open.
 */
describe("the commit watcher", () => {
  // The watcher reads every merchant's commits: a database of its own.
  let database: TestDatabase;
  let admin: pg.Pool;
  let relayRole: Pool;
  let queryRole: Pool;
  const logger = createLogger({ name: "commit-watcher-test", level: "silent" });

  beforeAll(async () => {
    database = await createTestDatabase("commit watch");
    admin = new pg.Pool({ connectionString: database.adminUrl, max: 6 });
    // The relay runs as the webhook role's login (deploy/local's process table).
    relayRole = createCommitWatchPool({ connectionString: database.roleUrls.webhook, applicationName: "watch-test-relay", logger });
    queryRole = createCommitWatchPool({ connectionString: database.roleUrls.query, applicationName: "watch-test-query", logger });
  });

  afterAll(async () => {
    await Promise.all([admin.end(), relayRole.end(), queryRole.end()]);
    await database.drop();
  });

  interface Reports {
    commits: string[][];
    unknown: number;
  }
  let reports: Reports;
  beforeEach(() => {
    reports = { commits: [], unknown: 0 };
  });

  function watcherOn(db: CommitWatcherOptions["db"], extra: Partial<CommitWatcherOptions> = {}) {
    return createCommitWatcher({
      db,
      logger,
      intervalMs: 10,
      onCommits: (merchantIds) => reports.commits.push([...merchantIds].sort()),
      onUnknown: () => {
        reports.unknown++;
      },
      ...extra,
    });
  }

  /**
   * A watcher past its first look, on a clock of the test's. The first look reads back the last
   * positions (earlier tests' commits, and positions earlier tests left unfilled); the clock then lets
   * the unfilled ones go, and the reports start empty.
   */
  async function settledWatcher(db: CommitWatcherOptions["db"], extra: Partial<CommitWatcherOptions> = {}) {
    const clock = { now: 0 };
    const watcher = watcherOn(db, { maxUnresolvedAgeMs: 1_000, now: () => clock.now, ...extra });
    await watcher.poll();
    clock.now += 1_000;
    await watcher.poll();
    expect(watcher.unresolved).toBe(0);
    reports = { commits: [], unknown: 0 };
    return { watcher, clock };
  }

  /** A position drawn and its change_commits row written by a transaction that is still open. */
  async function openCommit(merchantId: string): Promise<{ commit(): Promise<void>; rollback(): Promise<void> }> {
    const client = await admin.connect();
    await client.query("BEGIN");
    await client.query("INSERT INTO change_commits (merchant_id, position, xid) VALUES ($1, nextval('change_commit_position'), pg_current_xact_id())", [
      merchantId,
    ]);
    const end = async (statement: string) => {
      try {
        await client.query(statement);
      } finally {
        client.release();
      }
    };
    return { commit: () => end("COMMIT"), rollback: () => end("ROLLBACK") };
  }

  it("reports the merchants whose captured writes committed, once each, as the relay's role and the query service's", async () => {
    const first = await createMerchant(admin, "watch first");
    const second = await createMerchant(admin, "watch second");
    for (const db of [relayRole, queryRole]) {
      const { watcher } = await settledWatcher(db);
      await watcher.poll();
      expect(reports).toEqual({ commits: [], unknown: 0 });

      await createSubscription(admin, first);
      await createSubscription(admin, second);
      await createSubscription(admin, second);
      await watcher.poll();
      expect(reports.commits).toEqual([[first.merchantId, second.merchantId].sort()]);
      await watcher.poll();
      expect(reports.commits).toHaveLength(1);
      expect(watcher.unresolved).toBe(0);
      await watcher.close();
    }
  });

  it("watches through a pool of one read-only connection that plans each statement for its values", async () => {
    expect(queryRole.options.max).toBe(1);
    const { rows } = await queryRole.query<{ read_only: string; plan_cache_mode: string }>(
      "SELECT current_setting('default_transaction_read_only') AS read_only, current_setting('plan_cache_mode') AS plan_cache_mode",
    );
    expect(rows).toEqual([{ read_only: "on", plan_cache_mode: "auto" }]);
    await expect(queryRole.query("DELETE FROM change_commits")).rejects.toThrow(/read-only transaction/);
  });

  it("says it does not know at its first look, and still reports a commit that was in flight then", async () => {
    const inFlight = await createMerchant(admin, "watch first look");
    const committing = await openCommit(inFlight.merchantId);
    const watcher = watcherOn(relayRole);
    await watcher.poll();
    expect(reports.unknown).toBe(1);
    expect(reports.commits.flat()).not.toContain(inFlight.merchantId);

    await committing.commit();
    await watcher.poll();
    expect(reports.commits.flat()).toContain(inFlight.merchantId);
    await watcher.close();
  });

  it("reports a commit that became visible after its position was drawn", async () => {
    const late = await createMerchant(admin, "watch late");
    const metrics = new Registry();
    const { watcher } = await settledWatcher(relayRole, { metrics });

    const committing = await openCommit(late.merchantId);
    await watcher.poll();
    expect(reports.commits).toEqual([]);
    expect(watcher.unresolved).toBe(1);
    expect((await metrics.getSingleMetric("subdata_commit_watch_unresolved_positions")?.get())?.values[0]?.value).toBe(1);

    await committing.commit();
    await watcher.poll();
    expect(reports.commits).toEqual([[late.merchantId]]);
    expect(watcher.unresolved).toBe(0);
    await watcher.close();
  });

  it("looks for a position it cannot see for maxUnresolvedAgeMs, then lets it go", async () => {
    const aborted = await createMerchant(admin, "watch aborted");
    const { watcher, clock } = await settledWatcher(relayRole);

    // A commit that fails after drawing its position (a serialization failure at commit) leaves it unused.
    const failing = await openCommit(aborted.merchantId);
    await watcher.poll();
    expect(watcher.unresolved).toBe(1);
    await failing.rollback();
    clock.now += 999;
    await watcher.poll();
    expect(watcher.unresolved).toBe(1);
    clock.now += 1;
    await watcher.poll();
    expect(watcher.unresolved).toBe(0);
    expect(reports.commits).toEqual([]);
    await watcher.close();
  });

  it("keeps at most maxUnresolved positions, and says it no longer knows when it drops one", async () => {
    const merchant = await createMerchant(admin, "watch bound");
    const { watcher } = await settledWatcher(relayRole, { maxUnresolved: 2 });
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await openCommit(merchant.merchantId));
    await watcher.poll();
    expect(watcher.unresolved).toBe(2);
    expect(reports.unknown).toBe(1);
    for (const transaction of open) await transaction.commit();
    // The two kept are found; the one dropped was covered by the "unknown" report.
    await watcher.poll();
    expect(reports.commits).toEqual([[merchant.merchantId]]);
    expect(watcher.unresolved).toBe(0);
    await watcher.close();
  });

  it("reads at most maxRange positions in one look: a longer jump says it no longer knows", async () => {
    const merchant = await createMerchant(admin, "watch range");
    const { watcher } = await settledWatcher(relayRole, { maxRange: 2 });
    for (let i = 0; i < 3; i++) await createSubscription(admin, merchant);
    await watcher.poll();
    expect(reports.unknown).toBe(1);
    await watcher.poll();
    // Its place moved past the jump: the next commit is reported on its own.
    reports = { commits: [], unknown: 0 };
    await createSubscription(admin, merchant);
    await watcher.poll();
    expect(reports).toEqual({ commits: [[merchant.merchantId]], unknown: 0 });
    await watcher.close();
  });

  it("reads the range again after a look that failed between its two statements", async () => {
    const merchant = await createMerchant(admin, "watch failed look");
    let failNextRead = false;
    const flaky = {
      query: (...args: Parameters<pg.Pool["query"]>) => {
        if (failNextRead && String(args[0]).includes("change_commits c")) {
          failNextRead = false;
          return Promise.reject(new Error("connection lost"));
        }
        return (relayRole.query as (...a: unknown[]) => unknown)(...args);
      },
    } as CommitWatcherOptions["db"];
    const { watcher } = await settledWatcher(flaky);
    await createSubscription(admin, merchant);
    failNextRead = true;
    await expect(watcher.poll()).rejects.toThrow(/connection lost/);
    expect(reports.commits).toEqual([]);
    await watcher.poll();
    expect(reports.commits).toEqual([[merchant.merchantId]]);
    await watcher.close();
  });

  it("sends nothing while paused, and reports what committed meanwhile when it resumes", async () => {
    const merchant = await createMerchant(admin, "watch paused");
    const statements: string[] = [];
    let active = true;
    const { watcher } = await settledWatcher(recordingQueryable(relayRole, statements), { active: () => active });
    watcher.start();
    active = false;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const sentWhilePaused = statements.length;
    await createSubscription(admin, merchant);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(statements.length).toBe(sentWhilePaused);
    expect(reports.commits).toEqual([]);

    active = true;
    watcher.resume();
    await waitUntil(() => reports.commits.length > 0);
    expect(reports.commits).toEqual([[merchant.merchantId]]);
    await watcher.close();
  });

  it("reads the commits of its range and the positions it looks for, not the table", async () => {
    // 50,000 commits (of as many merchants: one transaction), then a look at the last 10 and two older positions.
    await admin.query(
      `INSERT INTO change_commits (merchant_id, position, xid)
       SELECT 'mer_plan_' || n, nextval('change_commit_position'), pg_current_xact_id() FROM generate_series(1, 50000) n`,
    );
    await admin.query("ANALYZE change_commits");
    const { rows } = await admin.query<{ last: string }>(commitWatchStatements.readSequence);
    const last = BigInt(rows[0]!.last);
    const client = await relayRole.connect();
    try {
      // Unnamed, as the watch sends it: planned for these values.
      const explained = await client.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${commitWatchStatements.readCommits}`,
        [String(last - 10n), String(last), [String(last - 30_000n), String(last - 20_000n)]],
      );
      const read = scans(explained.rows[0]!["QUERY PLAN"][0]!.Plan);
      expect(read.length).toBeGreaterThan(0);
      for (const scan of read) expect(scan, JSON.stringify(read)).toMatchObject({ rows: expect.toSatisfy((n: number) => n <= 12) });
    } finally {
      client.release();
    }
  });

  it("says it no longer knows when the sequence went back (a restored database), and carries on from there", async () => {
    const merchant = await createMerchant(admin, "watch restored");
    const { watcher } = await settledWatcher(relayRole);
    const { rows } = await admin.query<{ last: string }>(commitWatchStatements.readSequence);
    const last = BigInt(rows[0]!.last);
    try {
      await admin.query("SELECT setval('change_commit_position', $1::bigint)", [String(last - 5n)]);
      await watcher.poll();
      expect(reports.unknown).toBe(1);
    } finally {
      await admin.query("SELECT setval('change_commit_position', $1::bigint)", [String(last)]);
    }
    await watcher.poll();
    reports = { commits: [], unknown: 0 };
    await createSubscription(admin, merchant);
    await watcher.poll();
    expect(reports.commits).toEqual([[merchant.merchantId]]);
    await watcher.close();
  });

  async function waitUntil(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
  }
});
