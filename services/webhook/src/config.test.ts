import { randomBytes } from "node:crypto";
import { ConfigError } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { loadWebhookConfig } from "./config.ts";

const valid = {
  DATABASE_URL: "postgres://subdata_webhook@127.0.0.1:5432/subdata",
  SUBDATA_SERVICE_TOKEN: "s".repeat(32),
  SUBDATA_PAGE_TOKEN_SECRET: "p".repeat(32),
  SUBDATA_WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
};

describe("webhook config", () => {
  it("defaults to port 8093 with private targets refused", () => {
    const config = loadWebhookConfig(valid);
    expect(config.PORT).toBe(8093);
    expect(config.SUBDATA_WEBHOOK_ALLOW_PRIVATE).toBe(false);
    expect(config.NATS_URL).toBe("nats://127.0.0.1:4222");
  });

  it("requires the secret key, without a default", () => {
    const { SUBDATA_WEBHOOK_SECRET_KEY: _, ...rest } = valid;
    expect(() => loadWebhookConfig(rest)).toThrow(/SUBDATA_WEBHOOK_SECRET_KEY is not set/);
  });

  it("refuses a key that is not 32 bytes, without echoing it", () => {
    const key = randomBytes(16).toString("base64");
    let error: unknown;
    try {
      loadWebhookConfig({ ...valid, SUBDATA_WEBHOOK_SECRET_KEY: key });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain("SUBDATA_WEBHOOK_SECRET_KEY");
    expect((error as Error).message).not.toContain(key);
  });

  it("reads SUBDATA_WEBHOOK_ALLOW_PRIVATE as a boolean", () => {
    expect(loadWebhookConfig({ ...valid, SUBDATA_WEBHOOK_ALLOW_PRIVATE: "true" }).SUBDATA_WEBHOOK_ALLOW_PRIVATE).toBe(true);
    expect(() => loadWebhookConfig({ ...valid, SUBDATA_WEBHOOK_ALLOW_PRIVATE: "yes" })).toThrow(ConfigError);
  });
});
