import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type ChargeOptions, createFixtures, type Fixtures } from "../support/fixtures.ts";
import { json, runCli } from "./run-cli.ts";

interface ChargeChange {
  id: string;
  previousStatus: string;
  status: string;
  previousVersion: number;
  version: number;
  changed: boolean;
  currency: string;
  amount: string;
  previousAmountRefunded: string;
  amountRefunded: string;
  refunded?: string;
}

describe("subdata charges", () => {
  const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl"), options: "-c TimeZone=UTC" });
  const env = { DATABASE_URL: inject("adminDatabaseUrl") };
  let fixtures: Fixtures;
  let merchantId = "";
  let subscriptionId = "";

  beforeAll(async () => {
    await admin.connect();
    fixtures = createFixtures(admin);
    merchantId = await fixtures.merchant();
    subscriptionId = (await fixtures.subscription({ merchantId })).id;
  });
  afterAll(() => admin.end());

  const charge = (options: Partial<ChargeOptions> = {}) => fixtures.charge({ merchantId, subscriptionId, processedAt: "2026-01-02T00:00:00Z", ...options });

  const row = async (id: string) =>
    (
      await admin.query(
        `SELECT status::text, version::int, amount_refunded_minor::text AS refunded, failure_code, failure_message, processed_at
           FROM charges WHERE id = $1`,
        [id],
      )
    ).rows[0];

  /** Every event the change feed holds for a resource, in order. */
  const events = async (id: string) => (await admin.query("SELECT event_type, version::int FROM change_events WHERE resource_id = $1 ORDER BY seq", [id])).rows;

  describe("set-status", () => {
    it("processes a PENDING charge: processed_at is set, version 2, one charge.updated", async () => {
      const id = await charge({ status: "PENDING", processedAt: null });
      const run = await runCli(["charges", "set-status", id, "succeeded", "--json"], { env });
      expect(run).toMatchObject({ code: 0, stderr: "" });
      expect(json<ChargeChange>(run)).toEqual({
        id,
        previousStatus: "PENDING",
        status: "SUCCEEDED",
        previousVersion: 1,
        version: 2,
        changed: true,
        currency: "USD",
        amount: "19.99",
        previousAmountRefunded: "0.00",
        amountRefunded: "0.00",
      });
      expect(await row(id)).toMatchObject({ status: "SUCCEEDED", version: 2, processed_at: expect.any(Date), failure_code: null });
      expect(await events(id)).toEqual([
        { event_type: "charge.created", version: 1 },
        { event_type: "charge.updated", version: 2 },
      ]);
    });

    it("fails a charge with the default code and its message, keeping processed_at, and changes them on request", async () => {
      const id = await charge();
      const failed = await runCli(["charges", "set-status", id, "FAILED"], { env });
      expect(failed).toMatchObject({ code: 0, stdout: `${id}: SUCCEEDED → FAILED, version 2\n` });
      expect(await row(id)).toMatchObject({
        status: "FAILED",
        version: 2,
        failure_code: "card_declined",
        failure_message: "Your card was declined.",
        processed_at: new Date("2026-01-02T00:00:00Z"),
      });

      // Another code from the catalog brings its own message.
      const recoded = await runCli(["charges", "set-status", id, "FAILED", "--failure-code", "insufficient_funds"], { env });
      expect(recoded.stdout).toBe(`${id}: FAILED (updated), version 3\n`);
      expect(await row(id)).toMatchObject({ version: 3, failure_code: "insufficient_funds", failure_message: "Your card has insufficient funds." });

      // A message alone keeps the code; any code with a message of its own.
      await runCli(["charges", "set-status", id, "FAILED", "--failure-message", "Bank said no."], { env });
      expect(await row(id)).toMatchObject({ version: 4, failure_code: "insufficient_funds", failure_message: "Bank said no." });
      await runCli(["charges", "set-status", id, "FAILED", "--failure-code", "do_not_honor", "--failure-message", "Do not honor."], { env });
      expect(await row(id)).toMatchObject({ version: 5, failure_code: "do_not_honor", failure_message: "Do not honor." });

      // Leaving FAILED clears both.
      await runCli(["charges", "set-status", id, "SUCCEEDED"], { env });
      expect(await row(id)).toMatchObject({ status: "SUCCEEDED", version: 6, failure_code: null, failure_message: null });
      expect((await events(id)).map((event) => `${event.event_type} ${event.version}`)).toEqual([
        "charge.created 1",
        "charge.updated 2",
        "charge.updated 3",
        "charge.updated 4",
        "charge.updated 5",
        "charge.updated 6",
      ]);
    });

    it("REFUNDED refunds the whole amount; PENDING and SKIPPED have no processed_at and nothing refunded", async () => {
      const id = await charge({ amountMinor: 4_250, status: "PARTIALLY_REFUNDED", amountRefundedMinor: 1_000 });
      const refunded = json<ChargeChange>(await runCli(["charges", "set-status", id, "REFUNDED", "--json"], { env }));
      expect(refunded).toMatchObject({
        previousStatus: "PARTIALLY_REFUNDED",
        status: "REFUNDED",
        previousAmountRefunded: "10.00",
        amountRefunded: "42.50",
        version: 2,
      });
      expect(await row(id)).toMatchObject({ refunded: "4250", processed_at: new Date("2026-01-02T00:00:00Z") });

      for (const [status, version] of [
        ["SKIPPED", 3],
        ["PENDING", 4],
      ] as const) {
        const run = json<ChargeChange>(await runCli(["charges", "set-status", id, status, "--json"], { env }));
        expect(run).toMatchObject({ status, version, amountRefunded: "0.00" });
        expect(await row(id)).toMatchObject({ status, version, refunded: "0", processed_at: null });
      }
    });

    it("setting the state a charge already has changes nothing: same version, no event", async () => {
      const id = await charge({ status: "FAILED", failureCode: "expired_card", failureMessage: "Your card has expired." });
      for (const args of [["FAILED"], ["failed", "--failure-code", "expired_card"]]) {
        const run = await runCli(["charges", "set-status", id, ...args, "--json"], { env });
        expect(json<ChargeChange>(run)).toMatchObject({ changed: false, previousVersion: 1, version: 1, status: "FAILED" });
      }
      const text = await runCli(["charges", "set-status", id, "FAILED"], { env });
      expect(text.stdout).toBe(`${id}: already FAILED (nothing changed), version 1\n`);
      expect(await row(id)).toMatchObject({ version: 1, failure_code: "expired_card", failure_message: "Your card has expired." });
      expect(await events(id)).toEqual([{ event_type: "charge.created", version: 1 }]);
    });

    it.each([
      [["PARTIAL"], 'STATUS must be one of PENDING, SUCCEEDED, FAILED, SKIPPED, REFUNDED, got "PARTIAL"'],
      [["PARTIALLY_REFUNDED"], "STATUS PARTIALLY_REFUNDED needs an amount: use subdata charges refund CHARGE_ID --amount A"],
      [["SUCCEEDED", "--failure-code", "card_declined"], "--failure-code is only for STATUS FAILED"],
      [["REFUNDED", "--failure-message", "x"], "--failure-message is only for STATUS FAILED"],
      [["FAILED", "--failure-code", ""], "--failure-code must not be empty"],
      [["FAILED", "--failure-message", ""], "--failure-message must not be empty"],
      [
        ["FAILED", "--failure-code", "do_not_honor"],
        /^--failure-code "do_not_honor" has no default message: give --failure-message too \(codes with one: card_declined, /,
      ],
    ])("refuses %j with invalid_argument, leaving the charge alone", async (args, message) => {
      const id = await charge();
      const run = await runCli(["charges", "set-status", id, ...args, "--json"], { env });
      expect(run.code).toBe(1);
      expect(json(run)).toEqual({ error: { code: "invalid_argument", message: typeof message === "string" ? message : expect.stringMatching(message) } });
      expect(await row(id)).toMatchObject({ status: "SUCCEEDED", version: 1 });
    });

    it("answers an unknown id with not_found and exit 1", async () => {
      const run = await runCli(["charges", "set-status", "ch_00000000000000000000000000000000", "FAILED"], { env });
      expect(run).toMatchObject({ code: 1, stdout: "", stderr: "error: charge ch_00000000000000000000000000000000 not found\n" });
      const asJson = await runCli(["charges", "set-status", "ch_00000000000000000000000000000000", "FAILED", "--json"], { env });
      expect(json(asJson)).toEqual({ error: { code: "not_found", message: "charge ch_00000000000000000000000000000000 not found" } });
    });
  });

  describe("refund", () => {
    it("refunds part, then the rest: PARTIALLY_REFUNDED, then REFUNDED, one version and one event each", async () => {
      const id = await charge({ amountMinor: 2_499 });
      const partial = await runCli(["charges", "refund", id, "--amount", "5", "--json"], { env });
      expect(json<ChargeChange>(partial)).toEqual({
        id,
        previousStatus: "SUCCEEDED",
        status: "PARTIALLY_REFUNDED",
        previousVersion: 1,
        version: 2,
        changed: true,
        currency: "USD",
        amount: "24.99",
        previousAmountRefunded: "0.00",
        amountRefunded: "5.00",
        refunded: "5.00",
      });
      expect(await row(id)).toMatchObject({ status: "PARTIALLY_REFUNDED", refunded: "500", version: 2 });

      const rest = await runCli(["charges", "refund", id, "--amount", "19.990"], { env });
      expect(rest).toMatchObject({ code: 0, stdout: `${id}: refunded 19.99 USD (24.99 of 24.99 in all); PARTIALLY_REFUNDED → REFUNDED, version 3\n` });
      expect(await row(id)).toMatchObject({ status: "REFUNDED", refunded: "2499", version: 3 });
      expect(await events(id)).toEqual([
        { event_type: "charge.created", version: 1 },
        { event_type: "charge.updated", version: 2 },
        { event_type: "charge.updated", version: 3 },
      ]);
    });

    it("reads the amount with the currency's own digits: JPY whole, KWD to three places", async () => {
      const yen = await charge({ currency: "JPY", amountMinor: 1_500 });
      expect(json<ChargeChange>(await runCli(["charges", "refund", yen, "--amount", "1500", "--json"], { env }))).toMatchObject({
        status: "REFUNDED",
        amountRefunded: "1500",
      });
      const dinar = await charge({ currency: "KWD", amountMinor: 10_000 });
      expect(json<ChargeChange>(await runCli(["charges", "refund", dinar, "--amount", "1.25", "--json"], { env }))).toMatchObject({
        status: "PARTIALLY_REFUNDED",
        refunded: "1.250",
        amountRefunded: "1.250",
        amount: "10.000",
      });
      expect(await row(dinar)).toMatchObject({ refunded: "1250" });

      const fraction = await runCli(["charges", "refund", await charge({ currency: "JPY" }), "--amount", "10.5", "--json"], { env });
      expect(json(fraction)).toEqual({ error: { code: "invalid_argument", message: '--amount must be a whole amount in JPY, got "10.5"' } });
    });

    it.each([
      ["20.00", "--amount 20.00 is more than the 19.99 USD left to refund on charge"],
      ["99999999999999999999999", "--amount 99999999999999999999999 is more than the 19.99 USD left to refund on charge"],
      ["1.001", '--amount must have at most 2 decimal places in USD, got "1.001"'],
      ["0", '--amount must be more than 0, got "0"'],
      ["0.00", '--amount must be more than 0, got "0.00"'],
      ["-1", '--amount must be a decimal amount such as 12.50 (digits, at most one decimal point), got "-1"'],
      ["1e2", '--amount must be a decimal amount such as 12.50 (digits, at most one decimal point), got "1e2"'],
      ["1,50", '--amount must be a decimal amount such as 12.50 (digits, at most one decimal point), got "1,50"'],
      [".5", '--amount must be a decimal amount such as 12.50 (digits, at most one decimal point), got ".5"'],
    ])("refuses --amount %j with invalid_argument, leaving the charge alone", async (amount, message) => {
      const id = await charge();
      const run = await runCli(["charges", "refund", id, `--amount=${amount}`, "--json"], { env });
      expect(run.code).toBe(1);
      expect(json<{ error: { code: string; message: string } }>(run).error).toEqual({ code: "invalid_argument", message: expect.stringContaining(message) });
      expect(await row(id)).toMatchObject({ status: "SUCCEEDED", version: 1, refunded: "0" });
    });

    it("refuses to refund a charge that was not paid, or is refunded already (failed_precondition)", async () => {
      for (const status of ["FAILED", "PENDING", "REFUNDED"] as const) {
        const id = await charge({ status, ...(status === "REFUNDED" ? { amountRefundedMinor: 1_999 } : {}) });
        const run = await runCli(["charges", "refund", id, "--amount", "1", "--json"], { env });
        expect(run.code).toBe(1);
        expect(json(run)).toEqual({
          error: { code: "failed_precondition", message: `charge ${id} is ${status}: only a SUCCEEDED or PARTIALLY_REFUNDED charge can be refunded` },
        });
        expect((await row(id)).version).toBe(1);
      }
    });

    it("needs --amount, and answers an unknown id with not_found", async () => {
      const missing = await runCli(["charges", "refund", "ch_x", "--json"], { env });
      expect(missing.code).toBe(1);
      expect(json(missing)).toEqual({ error: { code: "usage", message: "required option '--amount <decimal>' not specified" } });
      const unknown = await runCli(["charges", "refund", "ch_00000000000000000000000000000000", "--amount", "1", "--json"], { env });
      expect(json(unknown)).toEqual({ error: { code: "not_found", message: "charge ch_00000000000000000000000000000000 not found" } });
    });
  });

  describe("delete", () => {
    it("hard-deletes the charge (charge.deleted at its last version); an order that named it loses charge_id (order.updated)", async () => {
      const id = await charge();
      await runCli(["charges", "set-status", id, "REFUNDED"], { env });
      const order = await fixtures.order({ merchantId, subscriptionId, chargeId: id });

      const run = await runCli(["charges", "delete", id, "--json"], { env });
      expect(run).toMatchObject({ code: 0, stderr: "" });
      expect(json(run)).toEqual({ id, previousStatus: "REFUNDED", status: null, previousVersion: 2, version: null, changed: true, ordersDetached: [order.id] });
      expect(await row(id)).toBeUndefined();
      expect(await events(id)).toEqual([
        { event_type: "charge.created", version: 1 },
        { event_type: "charge.updated", version: 2 },
        { event_type: "charge.deleted", version: 2 },
      ]);
      expect((await admin.query("SELECT charge_id, version::int FROM orders WHERE id = $1", [order.id])).rows).toEqual([{ charge_id: null, version: 2 }]);
      expect(await events(order.id)).toEqual([
        { event_type: "order.created", version: 1 },
        { event_type: "order.updated", version: 2 },
      ]);
    });

    it("says what it did in text, and answers a second delete with not_found", async () => {
      const id = await charge({ status: "PENDING", processedAt: null });
      const run = await runCli(["charges", "delete", id], { env });
      expect(run).toMatchObject({ code: 0, stdout: `${id}: deleted (was PENDING, version 1)\n` });
      const again = await runCli(["charges", "delete", id, "--json"], { env });
      expect(again.code).toBe(1);
      expect(json(again)).toEqual({ error: { code: "not_found", message: `charge ${id} not found` } });
      expect((await events(id)).map((event) => event.event_type)).toEqual(["charge.created", "charge.deleted"]);
    });

    it("says in its help that it is for development only and what it produces", async () => {
      const help = await runCli(["charges", "delete", "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout.replace(/\s+/g, " ")).toMatch(
        /DEVELOPMENT ONLY: hard-delete a charge, which the app never does; the database records charge\.deleted/,
      );
    });
  });
});
