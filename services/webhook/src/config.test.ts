import { randomBytes } from "node:crypto";
import { ConfigError } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { loadWebhookConfig } from "./config.ts";

const valid = {
  DATABASE_URL: "postgres://subdata_webhook@127.0.0.1:5432/subdata",
  SUBDATA_PAGE_TOKEN_SECRET: randomBytes(24).toString("base64url"),
  SUBDATA_WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
};

const acceptedToken = randomBytes(32).toString("hex");
const newToken = randomBytes(32).toString("hex");
const acceptedPageSecret = randomBytes(24).toString("base64url");

describe("webhook config", () => {
  it("defaults to port 8093 with private targets refused", () => {
    const config = loadWebhookConfig(valid);
    expect(config.PORT).toBe(8093);
    expect(config.SUBDATA_WEBHOOK_ALLOW_PRIVATE).toBe(false);
    expect(config.NATS_URL).toBe("nats://127.0.0.1:4222");
  });

  it("refuses at start a merchant in-flight cap below the endpoint's", () => {
    expect(() => loadWebhookConfig({ ...valid, SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "64", SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: "32" })).toThrow(
      /SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT is invalid: 32 is below SUBDATA_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT/,
    );
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

describe("webhook config: keys and secrets accepted during a rotation", () => {
  it("reads previous master keys and accepted secrets as lists, empty by default", () => {
    expect(loadWebhookConfig(valid).SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS).toEqual([]);
    expect(loadWebhookConfig(valid).SUBDATA_CONSOLE_TOKEN_SHA256).toEqual([]);
    const keys = [randomBytes(32).toString("base64"), randomBytes(32).toString("base64")];
    const config = loadWebhookConfig({
      ...valid,
      SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: keys.join(","),
      SUBDATA_CONSOLE_TOKEN_SHA256: `${acceptedToken},${newToken}`,
      SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: acceptedPageSecret,
    });
    expect(config.SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS).toEqual(keys);
    expect(config.SUBDATA_CONSOLE_TOKEN_SHA256).toEqual([Buffer.from(acceptedToken, "hex"), Buffer.from(newToken, "hex")]);
    expect(config.SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED).toEqual([acceptedPageSecret]);
  });

  it("refuses a previous key that is not base64 of 32 bytes, or an empty item, naming the variable and not the key", () => {
    const good = randomBytes(32).toString("base64");
    const short = randomBytes(16).toString("base64");
    const problems = (value: string) => {
      try {
        loadWebhookConfig({ ...valid, SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: value });
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error("expected a ConfigError");
    };
    const message = problems(`${good},${short}`);
    expect(message).toContain("SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS is invalid: item 2 of 2 must be base64 of exactly 32 bytes");
    expect(message).not.toContain(short);
    expect(message).not.toContain(good);
    expect(problems(`${good},`)).toContain("SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS is invalid: item 2 of 2 is empty");
  });

  it("refuses an accepted page-token secret that is too short", () => {
    expect(() => loadWebhookConfig({ ...valid, SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: "short" })).toThrow(
      /SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED is invalid: item 1 of 1 must be at least 32 characters/,
    );
  });

  it("refuses an all-zero key, naming the variable", () => {
    expect(() => loadWebhookConfig({ ...valid, SUBDATA_WEBHOOK_SECRET_KEY: Buffer.alloc(32).toString("base64") })).toThrow(
      /SUBDATA_WEBHOOK_SECRET_KEY is invalid: is not a generated key/,
    );
  });

  it("refuses a caller hash that is not a SHA-256, or a third one, naming the variable", () => {
    expect(() => loadWebhookConfig({ ...valid, SUBDATA_APP_TOKEN_SHA256: "not-a-hash" })).toThrow(
      /SUBDATA_APP_TOKEN_SHA256 is invalid: item 1 of 1 must be 64 lowercase hex digits/,
    );
    const three = [acceptedToken, newToken, randomBytes(32).toString("hex")].join(",");
    expect(() => loadWebhookConfig({ ...valid, SUBDATA_CLI_TOKEN_SHA256: three })).toThrow(/SUBDATA_CLI_TOKEN_SHA256 is invalid: holds at most two hashes/);
  });
});
