import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, runCli } from "../cli/run-cli.ts";
import { freePort } from "../support/free-port.ts";
import { pollUntil } from "../gateway/gateway-harness.ts";
import { apiSnapshot, copySnapshot, eventsAfter, seedMerchant, spawnMirror, startMirrorHarness, syncState, type MirrorHarness } from "./mirror-harness.ts";

let harness: MirrorHarness;

beforeAll(async () => {
  harness = await startMirrorHarness();
});

afterAll(async () => {
  await harness?.close();
});

/** The mirror's bin to completion (no --follow). */
async function runBin(args: readonly string[], key: string | undefined, extraEnv: Record<string, string> = {}) {
  const run = spawnMirror(args, { ...(key ? { SUBDATA_API_KEY: key } : {}), ...extraEnv });
  const code = await run.exited;
  return { code, stdout: run.stdout.join("\n"), stderr: run.stderr.join("\n") };
}

const copyArgs = (schema: string, ...more: string[]) => ["--api-url", harness.apiUrl, "--to", harness.targetUrl, "--schema", schema, ...more];

describe("subdata-mirror as a process", () => {
  it("follows the feed until SIGTERM, then finishes its page and exits 0", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 2);
    const mirror = spawnMirror([...copyArgs("bin_follow"), "--follow"], { SUBDATA_API_KEY: merchant.key });
    try {
      await mirror.waitForLine(/caught up/);
      await harness.source.query("UPDATE subscriptions SET status = 'PAUSED', paused_at = now() WHERE merchant_id = $1", [merchant.merchantId]);
      await harness.gateway.fixtures.subscription({ merchantId: merchant.merchantId });
      const expected = await apiSnapshot(merchant.client);
      await pollUntil(async () => isDeepStrictEqual(await copySnapshot(harness.target, "bin_follow"), expected), "the copy to follow", 30_000);
    } finally {
      mirror.child.kill("SIGTERM");
    }
    expect(await mirror.exited).toBe(0);
    expect(mirror.stdout.join("\n")).toMatch(
      /^bin_follow: 3 subscriptions, 4 charges, 2 orders, 4 order_line_items; \d+ feed events applied in all \(stopped; run again to resume\)$/,
    );
  });

  it("killed with SIGKILL while following, resumes on the next run with nothing lost or applied twice", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 3);
    const before = await merchant.client.listEvents({ cursor: "head" });
    const mirror = spawnMirror([...copyArgs("bin_killed"), "--follow"], { SUBDATA_API_KEY: merchant.key });
    try {
      await mirror.waitForLine(/caught up/);
      for (let round = 0; round < 5; round++) {
        await harness.source.query("UPDATE subscriptions SET quantity = quantity + 1 WHERE merchant_id = $1", [merchant.merchantId]);
      }
    } finally {
      mirror.child.kill("SIGKILL");
    }
    expect(await mirror.exited).toBe("SIGKILL");
    await harness.source.query("DELETE FROM orders WHERE merchant_id = $1", [merchant.merchantId]);
    await harness.gateway.fixtures.subscription({ merchantId: merchant.merchantId, currency: "JPY" });

    const resumed = await runBin(copyArgs("bin_killed", "--json"), merchant.key);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      schema: "bin_killed",
      phase: "feed",
      stopped: false,
      rows: { subscriptions: 4, charges: 6, orders: 0, order_line_items: 0 },
    });
    expect(await copySnapshot(harness.target, "bin_killed")).toEqual(await apiSnapshot(merchant.client));
    expect(Number((await syncState(harness.target, "bin_killed"))?.events_applied)).toBe(await eventsAfter(merchant.client, before.next_cursor));
  });
});

describe("subdata-mirror refusing bad input", () => {
  it("names a key the API refuses and exits 1 without touching the target", async () => {
    const run = await runBin(copyArgs("bad_key"), "sds_0000000000000000000000000000000000000");
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("error: the API refused the key in SUBDATA_API_KEY (invalid_api_key): check the key");
    const schemas = await harness.target.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'bad_key'");
    expect(schemas.rowCount).toBe(0);
  });

  it("names a missing key variable and exits 2", async () => {
    const plain = await runBin(copyArgs("no_key"), undefined);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toBe("error: SUBDATA_API_KEY is not set: put the API key (sds_…) in it, or name another variable with --api-key-env");
    const named = await runBin(copyArgs("no_key", "--api-key-env", "ACME_SUBDATA_KEY", "--json"), undefined);
    expect(named.code).toBe(2);
    expect(JSON.parse(named.stdout)).toEqual({ error: { code: "config", message: "ACME_SUBDATA_KEY is not set: put the API key (sds_…) in it" } });
  });

  it("reads the key from the variable --api-key-env names", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 1);
    const run = await runBin(copyArgs("named_key", "--api-key-env", "ACME_SUBDATA_KEY"), undefined, { ACME_SUBDATA_KEY: merchant.key });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^named_key: 1 subscriptions, 2 charges, 1 orders, 2 order_line_items; 0 feed events applied in all \(up to date\)$/);
  });

  it("names an API it cannot reach and exits 1", async () => {
    const port = await freePort();
    const run = await runBin(["--api-url", `http://127.0.0.1:${port}`, "--to", harness.targetUrl, "--schema", "no_api"], "sds_whatever");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^error: could not reach the subdata API at http://127\\.0\\.0\\.1:${port}/api/v1/events\\?cursor=head: ECONNREFUSED`),
    );
    expect(run.stderr.split("\n")).toHaveLength(1);
  });

  it("names a target database it cannot reach, without its password, and exits 1", async () => {
    const merchant = await harness.merchant();
    const port = await freePort();
    const run = await runBin(["--api-url", harness.apiUrl, "--to", `postgres://postgres:hunter2@127.0.0.1:${port}/copy`], merchant.key);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^error: could not connect to the target database postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${port}/copy: .*ECONNREFUSED`),
    );
    expect(run.stderr).not.toMatch(/hunter2/);
  });

  it("refuses a target schema whose tables have another shape, changing nothing", async () => {
    const merchant = await harness.merchant();
    await harness.target.query("CREATE SCHEMA shaped; CREATE TABLE shaped.orders (id integer PRIMARY KEY, note text)");
    const run = await runBin(copyArgs("shaped"), merchant.key);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      "error: the target schema shaped has a table orders of another shape (id is integer, not text; no column subscription_id; no column charge_id; …): " +
        "mirror into another --schema, or drop that table",
    );
    const tables = await harness.target.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'shaped'");
    expect(tables.rows).toEqual([{ table_name: "orders" }]);
  });

  it("refuses a copy made through another merchant's key (invalid_cursor)", async () => {
    const first = await harness.merchant();
    const second = await harness.merchant();
    expect((await runBin(copyArgs("one_merchant"), first.key)).code).toBe(0);
    const run = await runBin(copyArgs("one_merchant"), second.key);
    expect(run.code).toBe(1);
    expect(run.stderr.split("\n").at(-1)).toMatch(/^error: the API refused the cursor stored in sync_state \(invalid_cursor\): .*--resync$/);
  });

  it("asks for --resync when the stored cursor is past the feed's retention, and --resync copies anew", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 2);
    expect((await runBin(copyArgs("expiring"), merchant.key)).code).toBe(0);
    await harness.source.query("UPDATE subscriptions SET quantity = 9 WHERE merchant_id = $1", [merchant.merchantId]);
    await harness.source.query("DELETE FROM orders WHERE merchant_id = $1", [merchant.merchantId]);
    // Retention removed everything up to the merchant's latest commit: the stored cursor is before it.
    await harness.source.query(
      `INSERT INTO change_feed_horizons (merchant_id, purged_through)
       SELECT merchant_id, max(position) FROM change_commits WHERE merchant_id = $1 GROUP BY merchant_id`,
      [merchant.merchantId],
    );

    const expired = await runBin(copyArgs("expiring"), merchant.key);
    expect(expired.code).toBe(1);
    expect(expired.stderr.split("\n").at(-1)).toMatch(/^error: the stored feed cursor has expired .*: run again with --resync to copy everything anew$/);

    const resynced = await runBin(copyArgs("expiring", "--resync"), merchant.key);
    expect(resynced.code).toBe(0);
    expect(await copySnapshot(harness.target, "expiring")).toEqual(await apiSnapshot(merchant.client));
    expect((await copySnapshot(harness.target, "expiring")).orders).toEqual([]);
  });
});

describe("npx subdata mirror", () => {
  it("delegates to the mirror, with the CLI's --json output", async () => {
    const merchant = await harness.merchant();
    await seedMerchant(harness, merchant.merchantId, 2);
    const run = await runCli(["mirror", ...copyArgs("through_cli"), "--json"], { env: { SUBDATA_API_KEY: merchant.key } });
    expect(run.code).toBe(0);
    expect(json(run)).toEqual({
      schema: "through_cli",
      phase: "feed",
      stopped: false,
      events_applied: 0,
      rows: { subscriptions: 2, charges: 4, orders: 2, order_line_items: 4 },
    });
    expect(await copySnapshot(harness.target, "through_cli")).toEqual(await apiSnapshot(merchant.client));
  });

  it("answers a refused key with exit 1 and the mirror's error code", async () => {
    const run = await runCli(["mirror", ...copyArgs("cli_bad_key"), "--json"], { env: { SUBDATA_API_KEY: "sds_nope" } });
    expect(run.code).toBe(1);
    expect(json(run)).toEqual({ error: { code: "api_key", message: "the API refused the key in SUBDATA_API_KEY (invalid_api_key): check the key" } });
  });
});
