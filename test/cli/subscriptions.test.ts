import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { json, runCli } from "./run-cli.ts";

interface StatusChange {
  id: string;
  previousStatus: string;
  status: string;
  previousVersion: number;
  version: number;
  changed: boolean;
}

describe("subdata subscriptions set-status", () => {
  const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl"), options: "-c TimeZone=UTC" });
  const env = { DATABASE_URL: inject("adminDatabaseUrl") };
  let subscriptionId = "";

  beforeAll(async () => {
    await admin.connect();
    const merchantId = `mer_clitest_${randomBytes(6).toString("hex")}`;
    const seeded = await runCli(["seed", "--merchant", merchantId, "--subscriptions", "6", "--json"], { env });
    expect(seeded.code).toBe(0);
    // The first subscription of a run is ACTIVE.
    const active = await admin.query("SELECT id FROM subscriptions WHERE merchant_id = $1 AND status = 'ACTIVE' LIMIT 1", [merchantId]);
    subscriptionId = active.rows[0].id;
  });
  afterAll(() => admin.end());

  const row = async () =>
    (
      await admin.query(
        `SELECT status::text, version::int, paused_at, cancelled_at, cancellation_reason, next_charge_at
           FROM subscriptions WHERE id = $1`,
        [subscriptionId],
      )
    ).rows[0];

  it("pauses, cancels and reactivates with consistent fields, bumping version by one each time", async () => {
    const start = await row();

    const paused = await runCli(["subscriptions", "set-status", subscriptionId, "PAUSED", "--json"], { env });
    expect(paused.code).toBe(0);
    expect(json<StatusChange>(paused)).toEqual({
      id: subscriptionId,
      previousStatus: "ACTIVE",
      status: "PAUSED",
      previousVersion: start.version,
      version: start.version + 1,
      changed: true,
    });
    expect(await row()).toMatchObject({ status: "PAUSED", version: start.version + 1, paused_at: expect.any(Date), next_charge_at: null, cancelled_at: null });

    const cancelled = await runCli(["subscriptions", "set-status", subscriptionId, "cancelled", "--reason", "too_expensive", "--json"], { env });
    expect(json<StatusChange>(cancelled)).toMatchObject({ status: "CANCELLED", version: start.version + 2 });
    expect(await row()).toMatchObject({ paused_at: null, cancelled_at: expect.any(Date), cancellation_reason: "too_expensive", next_charge_at: null });

    const active = await runCli(["subscriptions", "set-status", subscriptionId, "ACTIVE"], { env });
    expect(active.code).toBe(0);
    expect(active.stdout).toMatch(new RegExp(`CANCELLED → ACTIVE, version ${start.version + 3}`));
    expect(await row()).toMatchObject({ status: "ACTIVE", cancelled_at: null, cancellation_reason: null, next_charge_at: expect.any(Date) });
  });

  it("leaves version alone when the subscription already has the status", async () => {
    const before = await row();
    const again = await runCli(["subscriptions", "set-status", subscriptionId, before.status, "--json"], { env });
    expect(json<StatusChange>(again)).toMatchObject({ changed: false, version: before.version });
    expect((await row()).version).toBe(before.version);
  });

  it("refuses an unknown status without touching the row", async () => {
    const before = await row();
    const run = await runCli(["subscriptions", "set-status", subscriptionId, "DELETED"], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/STATUS must be one of ACTIVE, TRIALING, PAST_DUE, PAUSED, CANCELLED, EXPIRED/);
    expect((await row()).version).toBe(before.version);
  });

  it("answers an unknown id with not_found and exit 1", async () => {
    const run = await runCli(["subscriptions", "set-status", "sub_00000000000000000000000000000000", "PAUSED", "--json"], { env });
    expect(run.code).toBe(1);
    expect(json(run)).toEqual({ error: { code: "not_found", message: "subscription sub_00000000000000000000000000000000 not found" } });
  });
});
