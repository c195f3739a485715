import { ConfigError } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { loadRelayConfig } from "./config.ts";
import { streamRetentionWarning } from "./event-stream.ts";

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

describe("the stream's retention against the outbox's", () => {
  it("keeps events 7 days in both by default, and refuses a stream that keeps them less than the outbox, naming both settings", () => {
    const config = loadRelayConfig(valid);
    expect([config.SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS, config.SUBDATA_RELAY_RETENTION_DAYS]).toEqual([7, 7]);
    expect(loadRelayConfig({ ...valid, SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS: "30", SUBDATA_RELAY_RETENTION_DAYS: "14" }).SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS).toBe(
      30,
    );
    const refused = () => loadRelayConfig({ ...valid, SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS: "3", SUBDATA_RELAY_RETENTION_DAYS: "7" });
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS.*SUBDATA_RELAY_RETENTION_DAYS/);
  });

  it("refuses a stream that would keep events longer than the feed keeps the rows ingest checks them against", () => {
    const refused = () => loadRelayConfig({ ...valid, SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS: "60", SUBDATA_FEED_RETENTION_DAYS: "30" });
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS.*SUBDATA_FEED_RETENTION_DAYS/);
    expect(loadRelayConfig({ ...valid, SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS: "30", SUBDATA_FEED_RETENTION_DAYS: "30" }).SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS).toBe(
      30,
    );
  });

  it("warns about a stream found keeping events less long than the outbox, by name, and not about one keeping them as long or forever", () => {
    const day = 86_400_000;
    expect(streamRetentionWarning("SUBDATA_EVENTS", 2 * day, 7)).toMatch(/^stream SUBDATA_EVENTS keeps events 2\.0 days .*SUBDATA_RELAY_RETENTION_DAYS/);
    expect(streamRetentionWarning("SUBDATA_EVENTS", 7 * day, 7)).toBeUndefined();
    expect(streamRetentionWarning("SUBDATA_EVENTS", 0, 7)).toBeUndefined();
  });
});
