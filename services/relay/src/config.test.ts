import { describe, expect, it } from "vitest";
import { loadRelayConfig } from "./config.ts";

const valid = { DATABASE_URL: "postgres://subdata_webhook@127.0.0.1:5432/subdata" };

describe("relay config", () => {
  it("keeps the change feed 400 days by default and takes any retention from 30 days", () => {
    expect(loadRelayConfig(valid).SUBDATA_FEED_RETENTION_DAYS).toBe(400);
    expect(loadRelayConfig({ ...valid, SUBDATA_FEED_RETENTION_DAYS: "30" }).SUBDATA_FEED_RETENTION_DAYS).toBe(30);
    expect(loadRelayConfig({ ...valid, SUBDATA_FEED_RETENTION_DAYS: "3650" }).SUBDATA_FEED_RETENTION_DAYS).toBe(3650);
  });

  it("refuses a feed retention under 30 days at start-up, naming the variable", () => {
    for (const days of ["29", "0", "-1", "7.5", "a year"]) {
      expect(() => loadRelayConfig({ ...valid, SUBDATA_FEED_RETENTION_DAYS: days })).toThrow(/SUBDATA_FEED_RETENTION_DAYS is invalid/);
    }
    expect(() => loadRelayConfig({ ...valid, SUBDATA_FEED_RETENTION_DAYS: "29" })).toThrow(/at least 30/);
  });
});
