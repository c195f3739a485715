import { ConfigError, loadConfig } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { deliveryPipelineConfigShape, deliveryPipelineSettings, formatDuration } from "./pipeline-config.ts";

describe("deliveryPipelineConfigShape", () => {
  it("has production defaults", () => {
    const settings = deliveryPipelineSettings(loadConfig(deliveryPipelineConfigShape, {}));
    expect(settings).toEqual({
      allowPrivate: false,
      retrySchedule: [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000],
      concurrency: 512,
      stream: "SUBDATA_EVENTS",
      subjectPrefix: "subdata.events",
      consumerName: "webhook-deliveries",
      disableAfterMs: 432_000_000,
      perEndpointConcurrency: 256,
      perMerchantConcurrency: 256,
      ingestLeaseMs: 15_000,
    });
  });

  it("reads every variable", () => {
    const config = loadConfig(deliveryPipelineConfigShape, {
      SUBDATA_WEBHOOK_ALLOW_PRIVATE: "true",
      SUBDATA_WEBHOOK_RETRY_SCHEDULE: "0s,100ms",
      SUBDATA_WEBHOOK_CONCURRENCY: "4",
      SUBDATA_EVENTS_STREAM: "S",
      SUBDATA_EVENTS_SUBJECT_PREFIX: "a.b",
      SUBDATA_WEBHOOK_CONSUMER: "c",
      SUBDATA_WEBHOOK_DISABLE_AFTER: "36h",
      SUBDATA_WEBHOOK_INGEST_LEASE_MS: "5000",
    });
    expect(deliveryPipelineSettings(config)).toMatchObject({
      allowPrivate: true,
      retrySchedule: [0, 100],
      concurrency: 4,
      disableAfterMs: 129_600_000,
      ingestLeaseMs: 5_000,
    });
  });

  it("names SUBDATA_WEBHOOK_RETRY_SCHEDULE when the schedule is bad", () => {
    expect(() => loadConfig(deliveryPipelineConfigShape, { SUBDATA_WEBHOOK_RETRY_SCHEDULE: "0s,soon" })).toThrow(ConfigError);
    expect(() => loadConfig(deliveryPipelineConfigShape, { SUBDATA_WEBHOOK_RETRY_SCHEDULE: "0s,soon" })).toThrow(
      /SUBDATA_WEBHOOK_RETRY_SCHEDULE is invalid: "soon" is not a duration/,
    );
    expect(() => loadConfig(deliveryPipelineConfigShape, { SUBDATA_WEBHOOK_DISABLE_AFTER: "forever" })).toThrow(/SUBDATA_WEBHOOK_DISABLE_AFTER/);
  });

  it("reads the in-flight caps, and derives them from the concurrency when unset", () => {
    const read = (environment: Record<string, string>) => deliveryPipelineSettings(loadConfig(deliveryPipelineConfigShape, environment));
    expect(read({ SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "8", SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: "32" })).toMatchObject({
      perEndpointConcurrency: 8,
      perMerchantConcurrency: 32,
    });
    expect(read({ SUBDATA_WEBHOOK_CONCURRENCY: "10" })).toMatchObject({ perEndpointConcurrency: 5, perMerchantConcurrency: 5 });
    // An endpoint cap above the default merchant cap lifts the merchant's with it.
    expect(read({ SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "300" })).toMatchObject({ perEndpointConcurrency: 300, perMerchantConcurrency: 300 });
  });

  it("refuses in-flight caps that cannot work together, naming the variables", () => {
    const settings = (environment: Record<string, string>) => () => deliveryPipelineSettings(loadConfig(deliveryPipelineConfigShape, environment));
    expect(settings({ SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "16", SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: "8" })).toThrow(ConfigError);
    expect(settings({ SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "16", SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: "8" })).toThrow(
      /SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT is invalid: 8 is below SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT \(16\)/,
    );
    expect(settings({ SUBDATA_WEBHOOK_CONCURRENCY: "64", SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: "100" })).toThrow(
      /SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT is invalid: 100 is above SUBDATA_WEBHOOK_CONCURRENCY \(64\)/,
    );
    expect(() => loadConfig(deliveryPipelineConfigShape, { SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "0" })).toThrow(
      /SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT is invalid/,
    );
    expect(() => loadConfig(deliveryPipelineConfigShape, { SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: "many" })).toThrow(
      /SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT is invalid/,
    );
  });

  it("formats durations for reasons", () => {
    expect(formatDuration(432_000_000)).toBe("5d");
    expect(formatDuration(129_600_000)).toBe("36h");
    expect(formatDuration(1_500)).toBe("1500ms");
  });
});
