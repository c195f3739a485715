import { describe, expect, it } from "vitest";
import { createProgressPrinter, fromEnvironment, resolveMirrorSettings } from "./mirror-command.ts";
import { shapeDifferences } from "./target-schema.ts";

const valid = { apiUrl: "http://127.0.0.1:8080", to: "postgres://me@127.0.0.1/warehouse" };

describe("the mirror's options", () => {
  it("reads the key from SUBDATA_API_KEY, or the variable --api-key-env names, and completes the API URL", () => {
    expect(resolveMirrorSettings(valid, fromEnvironment({ SUBDATA_API_KEY: "sds_a" }))).toEqual({
      apiUrl: "http://127.0.0.1:8080/api/v1",
      apiKey: "sds_a",
      apiKeyVariable: "SUBDATA_API_KEY",
      targetUrl: "postgres://me@127.0.0.1/warehouse",
      schema: "subdata",
      follow: false,
      resync: false,
    });
    expect(resolveMirrorSettings({ ...valid, apiKeyEnv: "OTHER", schema: "crm_copy", follow: true }, fromEnvironment({ OTHER: "sds_b" }))).toMatchObject({
      apiKey: "sds_b",
      apiKeyVariable: "OTHER",
      schema: "crm_copy",
      follow: true,
    });
  });

  it("refuses bad options with a message naming the option", () => {
    const env = fromEnvironment({ SUBDATA_API_KEY: "sds_a" });
    expect(() => resolveMirrorSettings({ to: valid.to }, env)).toThrow("--api-url is required");
    expect(() => resolveMirrorSettings({ apiUrl: valid.apiUrl }, env)).toThrow("--to is required");
    expect(() => resolveMirrorSettings({ ...valid, apiUrl: "ftp://x" }, env)).toThrow(/--api-url is invalid: expected http\(s\)/);
    expect(() => resolveMirrorSettings({ ...valid, to: "mysql://x/y" }, env)).toThrow("--to must be a postgres:// URL, got mysql:");
    expect(() => resolveMirrorSettings({ ...valid, schema: 'x"; DROP' }, env)).toThrow(/--schema must be a lower-case identifier/);
    expect(() => resolveMirrorSettings({ ...valid, apiKeyEnv: "NOT A NAME" }, env)).toThrow(/--api-key-env must be an environment variable name/);
    expect(() => resolveMirrorSettings(valid, fromEnvironment({}))).toThrow("SUBDATA_API_KEY is not set");
    // Names an object inherits are no setting.
    expect(() => resolveMirrorSettings({ ...valid, apiKeyEnv: "constructor" }, fromEnvironment({}))).toThrow("constructor is not set");
  });
});

describe("the target's shape check", () => {
  it("names missing, retyped, re-nulled and unexpected columns", () => {
    const differences = shapeDifferences("order_line_items", [
      { column_name: "order_id", data_type: "text", is_nullable: "NO" },
      { column_name: "position", data_type: "bigint", is_nullable: "NO" },
      { column_name: "sku", data_type: "text", is_nullable: "YES" },
      { column_name: "title", data_type: "text", is_nullable: "NO" },
      { column_name: "quantity", data_type: "integer", is_nullable: "NO" },
      { column_name: "unit_price", data_type: "numeric", is_nullable: "NO" },
      { column_name: "unit_price_currency", data_type: "text", is_nullable: "NO" },
      { column_name: "total", data_type: "numeric", is_nullable: "NO" },
      { column_name: "note", data_type: "text", is_nullable: "YES" },
    ]);
    expect(differences).toEqual(["position is bigint, not integer", "sku is nullable", "no column total_currency", "unexpected column note"]);
  });
});

describe("the progress lines", () => {
  it("prints phase changes at once and running totals at most every interval", () => {
    const lines: string[] = [];
    let now = 0;
    const print = createProgressPrinter(
      (line) => lines.push(line),
      () => now,
      1000,
    );
    print({ kind: "started", phase: "walk", resumed: false });
    now = 1500;
    print({ kind: "walk-page", resource: "charges", rows: 200 });
    now = 1600;
    print({ kind: "walk-page", resource: "orders", rows: 200 });
    print({ kind: "walked", resource: "orders" });
    print({ kind: "feed-page", events: 0, caughtUp: true });
    expect(lines).toEqual([
      "starting: taking the feed's head, then copying the lists",
      "copied 0 subscriptions, 200 charges, 0 orders",
      "orders: all copied (200 this run)",
      "feed: 0 events applied this run, caught up",
    ]);
  });
});
