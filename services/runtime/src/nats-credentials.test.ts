import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.ts";
import { natsCredentialShape, natsCredentials } from "./nats-credentials.ts";

const password = randomBytes(24).toString("hex");
const load = (env: NodeJS.ProcessEnv) => natsCredentials(loadConfig(natsCredentialShape, env));

describe("natsCredentials", () => {
  it("answers the user and password when both are set", () => {
    expect(load({ NATS_USER: "subdata-relay", NATS_PASSWORD: password })).toEqual({ user: "subdata-relay", pass: password });
  });

  it("answers none outside production when neither is set", () => {
    expect(load({})).toBeUndefined();
    expect(load({ NODE_ENV: "development" })).toBeUndefined();
  });

  it("requires them in production, naming NATS_USER", () => {
    expect(() => load({ NODE_ENV: "production" })).toThrow(ConfigError);
    expect(() => load({ NODE_ENV: "production" })).toThrow(/NATS_USER is not set/);
  });

  it("refuses one without the other, naming the missing variable", () => {
    expect(() => load({ NATS_USER: "subdata-relay" })).toThrow(/NATS_PASSWORD is not set/);
    expect(() => load({ NATS_PASSWORD: password })).toThrow(/NATS_USER is not set/);
  });

  it("refuses a short password and a user name with wildcards, never echoing the password", () => {
    let message = "";
    try {
      load({ NATS_USER: "subdata-relay", NATS_PASSWORD: "short-secret" });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/NATS_PASSWORD is invalid/);
    expect(message).not.toContain("short-secret");
    expect(() => load({ NATS_USER: "relay.>", NATS_PASSWORD: password })).toThrow(/NATS_USER is invalid/);
  });
});
