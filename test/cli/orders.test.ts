import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures, type Fixtures, type OrderOptions } from "../support/fixtures.ts";
import { json, runCli } from "./run-cli.ts";

interface LineItemAddition {
  id: string;
  previousStatus: string;
  status: string;
  previousVersion: number;
  version: number;
  changed: boolean;
  currency: string;
  lineItem: { position: number; sku: string; title: string; quantity: number; unitPrice: string; total: string };
  previousSubtotal: string;
  subtotal: string;
  previousTotal: string;
  total: string;
}

describe("subdata orders", () => {
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

  const order = async (options: Partial<OrderOptions> = {}) => (await fixtures.order({ merchantId, subscriptionId, ...options })).id;

  const row = async (id: string) =>
    (
      await admin.query(
        `SELECT status::text, version::int, subtotal_minor::text AS subtotal, discount_minor::text AS discount,
                shipping_minor::text AS shipping, tax_minor::text AS tax, total_minor::text AS total
           FROM orders WHERE id = $1`,
        [id],
      )
    ).rows[0];

  const lineItems = async (id: string) =>
    (
      await admin.query(
        "SELECT position, sku, title, quantity, unit_price_minor::text AS unit_price, total_minor::text AS total FROM order_line_items WHERE order_id = $1 ORDER BY position",
        [id],
      )
    ).rows;

  /** Every event the change feed holds for a resource, in order. */
  const events = async (id: string) => (await admin.query("SELECT event_type, version::int FROM change_events WHERE resource_id = $1 ORDER BY seq", [id])).rows;

  describe("set-status", () => {
    it("moves an order through every status, one version and one order.updated each", async () => {
      const id = await order({ status: "PAID" });
      const fulfilled = await runCli(["orders", "set-status", id, "fulfilled", "--json"], { env });
      expect(fulfilled).toMatchObject({ code: 0, stderr: "" });
      expect(json(fulfilled)).toEqual({ id, previousStatus: "PAID", status: "FULFILLED", previousVersion: 1, version: 2, changed: true });

      const refunded = await runCli(["orders", "set-status", id, "REFUNDED"], { env });
      expect(refunded.stdout).toBe(`${id}: FULFILLED → REFUNDED, version 3\n`);
      await runCli(["orders", "set-status", id, "CANCELLED"], { env });
      await runCli(["orders", "set-status", id, "Paid"], { env });
      expect(await row(id)).toMatchObject({ status: "PAID", version: 5 });
      expect(await events(id)).toEqual([
        { event_type: "order.created", version: 1 },
        { event_type: "order.updated", version: 2 },
        { event_type: "order.updated", version: 3 },
        { event_type: "order.updated", version: 4 },
        { event_type: "order.updated", version: 5 },
      ]);
    });

    it("setting the status an order already has changes nothing: same version, no event", async () => {
      const id = await order({ status: "FULFILLED" });
      expect(json(await runCli(["orders", "set-status", id, "FULFILLED", "--json"], { env }))).toMatchObject({ changed: false, version: 1 });
      expect((await runCli(["orders", "set-status", id, "FULFILLED"], { env })).stdout).toBe(`${id}: already FULFILLED (nothing changed), version 1\n`);
      expect(await events(id)).toEqual([{ event_type: "order.created", version: 1 }]);
    });

    it("refuses an unknown status and answers an unknown id with not_found", async () => {
      const id = await order();
      const bad = await runCli(["orders", "set-status", id, "SHIPPED", "--json"], { env });
      expect(bad.code).toBe(1);
      expect(json(bad)).toEqual({ error: { code: "invalid_argument", message: 'STATUS must be one of PAID, FULFILLED, CANCELLED, REFUNDED, got "SHIPPED"' } });
      expect((await row(id)).version).toBe(1);
      const unknown = await runCli(["orders", "set-status", "ord_00000000000000000000000000000000", "PAID"], { env });
      expect(unknown).toMatchObject({ code: 1, stdout: "", stderr: "error: order ord_00000000000000000000000000000000 not found\n" });
    });
  });

  describe("add-line-item", () => {
    it("appends at the next position and keeps subtotal and total adding up, in one version and one order.updated", async () => {
      const id = await order({
        lineItems: [
          { sku: "A", quantity: 2, unitPriceMinor: 1_000 },
          { sku: "B", unitPriceMinor: 550 },
        ],
        discountMinor: 300,
        shippingMinor: 495,
        taxMinor: 410,
      });
      expect(await row(id)).toMatchObject({ subtotal: "2550", total: "3155" });

      const run = await runCli(["orders", "add-line-item", id, "--sku", "MUG-1", "--title", "Mug, blue", "--quantity", "3", "--unit-price", "12.5", "--json"], {
        env,
      });
      expect(run).toMatchObject({ code: 0, stderr: "" });
      expect(json<LineItemAddition>(run)).toEqual({
        id,
        previousStatus: "PAID",
        status: "PAID",
        previousVersion: 1,
        version: 2,
        changed: true,
        currency: "USD",
        lineItem: { position: 3, sku: "MUG-1", title: "Mug, blue", quantity: 3, unitPrice: "12.50", total: "37.50" },
        previousSubtotal: "25.50",
        subtotal: "63.00",
        previousTotal: "31.55",
        total: "69.05",
      });
      // total = subtotal − discount + shipping + tax, as the generator makes orders.
      expect(await row(id)).toMatchObject({ version: 2, subtotal: "6300", discount: "300", shipping: "495", tax: "410", total: "6905" });
      expect((await lineItems(id)).at(-1)).toEqual({ position: 3, sku: "MUG-1", title: "Mug, blue", quantity: 3, unit_price: "1250", total: "3750" });
      expect(await events(id)).toEqual([
        { event_type: "order.created", version: 1 },
        { event_type: "order.updated", version: 2 },
      ]);
      // The event's snapshot, taken at commit, has the new item.
      const payload = (await admin.query("SELECT payload FROM change_events WHERE resource_id = $1 AND version = 2", [id])).rows[0].payload;
      expect(payload.object).toMatchObject({ subtotal_minor: "6300", total_minor: "6905", version: "2" });
      expect(payload.object.line_items.map((item: { sku: string }) => item.sku)).toEqual(["A", "B", "MUG-1"]);
      expect(payload.previous).toMatchObject({ subtotal_minor: "2550", total_minor: "3155", version: "1" });
    });

    it("a free item still makes one version and one order.updated; text names the line and the new totals", async () => {
      const id = await order({ currency: "JPY", lineItems: [{ unitPriceMinor: 1_500 }] });
      const run = await runCli(["orders", "add-line-item", id, "--sku=GIFT", "--title=Sticker", "--quantity=1", "--unit-price=0"], { env });
      expect(run).toMatchObject({ code: 0, stdout: `${id}: line 2 1 × 0 JPY; subtotal 1500 → 1500, total 1500 → 1500, version 2\n` });
      expect(await events(id)).toEqual([
        { event_type: "order.created", version: 1 },
        { event_type: "order.updated", version: 2 },
      ]);
      expect(await lineItems(id)).toHaveLength(2);
    });

    it("reads the unit price with the currency's digits (KWD: three places)", async () => {
      const id = await order({ currency: "KWD", lineItems: [{ unitPriceMinor: 1_000 }] });
      const run = json<LineItemAddition>(
        await runCli(["orders", "add-line-item", id, "--sku=S", "--title=T", "--quantity=2", "--unit-price=0.125", "--json"], { env }),
      );
      expect(run).toMatchObject({ lineItem: { unitPrice: "0.125", total: "0.250" }, subtotal: "1.250", total: "1.250" });
    });

    it.each([
      [["--unit-price=1.005"], '--unit-price must have at most 2 decimal places in USD, got "1.005"'],
      [["--unit-price=-1"], '--unit-price must be a decimal amount such as 12.50 (digits, at most one decimal point), got "-1"'],
      [
        ["--unit-price=99999999999999999999999"],
        "--unit-price 99999999999999999999999 × --quantity 1 makes the order's total more than 92233720368547758.07 USD",
      ],
      [
        ["--unit-price=90000000000000000", "--quantity=2"],
        "--unit-price 90000000000000000 × --quantity 2 makes the order's total more than 92233720368547758.07 USD",
      ],
      [["--quantity=0"], '--quantity must be a whole number from 1 to 1,000,000, got "0"'],
      [["--quantity=1.5"], '--quantity must be a whole number from 1 to 1,000,000, got "1.5"'],
      [["--sku="], "--sku must not be empty"],
      [["--title="], "--title must not be empty"],
    ])("refuses %j with invalid_argument, adding nothing", async (args, message) => {
      const id = await order();
      const defaults = ["--sku=S", "--title=T", "--quantity=1", "--unit-price=1"].filter(
        (option) => !args.some((arg) => arg.split("=")[0] === option.split("=")[0]),
      );
      const run = await runCli(["orders", "add-line-item", id, ...defaults, ...args, "--json"], { env });
      expect(run.code).toBe(1);
      expect(json(run)).toEqual({ error: { code: "invalid_argument", message } });
      expect((await row(id)).version).toBe(1);
      expect(await lineItems(id)).toHaveLength(1);
    });

    it("needs every option, and answers an unknown id with not_found", async () => {
      const missing = await runCli(["orders", "add-line-item", "ord_x", "--sku=S", "--title=T", "--quantity=1", "--json"], { env });
      expect(json(missing)).toEqual({ error: { code: "usage", message: "required option '--unit-price <decimal>' not specified" } });
      const unknown = await runCli(
        ["orders", "add-line-item", "ord_00000000000000000000000000000000", "--sku=S", "--title=T", "--quantity=1", "--unit-price=1", "--json"],
        { env },
      );
      expect(unknown.code).toBe(1);
      expect(json(unknown)).toEqual({ error: { code: "not_found", message: "order ord_00000000000000000000000000000000 not found" } });
    });
  });

  describe("delete", () => {
    it("hard-deletes the order and its items: one order.deleted at its last version, with the items; its charge keeps order_id", async () => {
      const chargeId = await fixtures.charge({ merchantId, subscriptionId });
      const id = await order({ chargeId, lineItems: [{ sku: "A" }, { sku: "B" }] });
      await admin.query("UPDATE charges SET order_id = $2 WHERE id = $1", [chargeId, id]);
      await runCli(["orders", "set-status", id, "FULFILLED"], { env });

      const run = await runCli(["orders", "delete", id, "--json"], { env });
      expect(run).toMatchObject({ code: 0, stderr: "" });
      expect(json(run)).toEqual({ id, previousStatus: "FULFILLED", status: null, previousVersion: 2, version: null, changed: true, lineItemsDeleted: 2 });
      expect(await row(id)).toBeUndefined();
      expect(await lineItems(id)).toEqual([]);
      expect(await events(id)).toEqual([
        { event_type: "order.created", version: 1 },
        { event_type: "order.updated", version: 2 },
        { event_type: "order.deleted", version: 2 },
      ]);
      const deleted = (await admin.query("SELECT payload FROM change_events WHERE resource_id = $1 AND event_type = 'order.deleted'", [id])).rows[0].payload;
      expect(deleted.object.line_items.map((item: { sku: string }) => item.sku)).toEqual(["A", "B"]);
      expect((await admin.query("SELECT order_id FROM charges WHERE id = $1", [chargeId])).rows).toEqual([{ order_id: id }]);
    });

    it("says what it did in text, answers a second delete with not_found, and warns in its help", async () => {
      const id = await order();
      expect((await runCli(["orders", "delete", id], { env })).stdout).toBe(`${id}: deleted with its 1 line item (was PAID, version 1)\n`);
      const again = await runCli(["orders", "delete", id, "--json"], { env });
      expect(again.code).toBe(1);
      expect(json(again)).toEqual({ error: { code: "not_found", message: `order ${id} not found` } });
      const help = await runCli(["orders", "delete", "--help"]);
      expect(help.stdout.replace(/\s+/g, " ")).toMatch(
        /DEVELOPMENT ONLY: hard-delete an order with its line items, which the app never does; the database records order\.deleted/,
      );
    });
  });
});
