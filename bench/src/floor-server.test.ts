import { describe, expect, it } from "vitest";
import { decodeFloorCursor, encodeFloorCursor, money, rfc3339 } from "./floor-server.ts";

describe("the floor's rendering", () => {
  it("writes Postgres timestamps as RFC 3339 UTC with milliseconds, truncated like the API's", () => {
    expect(rfc3339("2026-01-02 03:04:05.678901+00")).toBe("2026-01-02T03:04:05.678Z");
    expect(rfc3339("2026-01-02 03:04:05.6+00")).toBe("2026-01-02T03:04:05.600Z");
    expect(rfc3339("2026-01-02 03:04:05+00")).toBe("2026-01-02T03:04:05.000Z");
    expect(rfc3339(null)).toBeNull();
  });

  it("writes money with the currency's ISO 4217 digits", () => {
    expect(money("1999", "USD")).toEqual({ amount: "19.99", currency: "USD" });
    expect(money("5", "USD")).toEqual({ amount: "0.05", currency: "USD" });
    expect(money("1500", "JPY")).toEqual({ amount: "1500", currency: "JPY" });
    expect(money("1250", "KWD")).toEqual({ amount: "1.250", currency: "KWD" });
    expect(money("-1250", "EUR")).toEqual({ amount: "-12.50", currency: "EUR" });
    expect(() => money("1", "XYZ")).toThrow(/unknown currency/);
  });
});

describe("the floor's cursors", () => {
  const bound = { route: "subscriptions" as const, merchantId: "mer_a", filter: "ACTIVE" };
  const cursor = encodeFloorCursor("secret", { ...bound, createdAt: "2026-01-02 03:04:05.678901+00", id: "sub_1" });

  it("lead back to the exact position they were made for", () => {
    expect(decodeFloorCursor("secret", cursor, bound)).toEqual({ createdAt: "2026-01-02 03:04:05.678901+00", id: "sub_1" });
  });

  it.each([
    ["another secret", "other", cursor, bound],
    ["another merchant", "secret", cursor, { ...bound, merchantId: "mer_b" }],
    ["another filter", "secret", cursor, { ...bound, filter: "" }],
    ["another route", "secret", cursor, { ...bound, route: "orders" as const }],
    [
      "a changed payload",
      "secret",
      `${Buffer.from('["subscriptions","mer_a","ACTIVE","2020-01-01 00:00:00+00","sub_0"]').toString("base64url")}.${cursor.split(".")[1]}`,
      bound,
    ],
    ["no signature", "secret", cursor.split(".")[0]!, bound],
  ])("are refused with %s", (_, secret, text, expected) => {
    expect(() => decodeFloorCursor(secret, text, expected)).toThrow("invalid_cursor");
  });
});
