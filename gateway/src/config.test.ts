import { randomBytes } from "node:crypto";
import { ConfigError } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "./config.ts";

const token = randomBytes(24).toString("base64url");

describe("the gateway configuration", () => {
  it("has the documented defaults", () => {
    expect(loadGatewayConfig({ SUBDATA_GATEWAY_TOKEN: token })).toMatchObject({
      PORT: 8080,
      SUBDATA_QUERY_URL: "http://127.0.0.1:8091",
      SUBDATA_AUTH_URL: "http://127.0.0.1:8092",
      NATS_URL: "nats://127.0.0.1:4222",
      SUBDATA_RATE_LIMIT_QUOTA: 100,
      SUBDATA_RATE_LIMIT_WINDOW_SECONDS: 1,
      SUBDATA_API_KEY_CACHE_TTL_SECONDS: 1,
      SUBDATA_TRUST_PROXY: false,
    });
  });

  it("requires the service token, naming it but never printing values", () => {
    expect(() => loadGatewayConfig({})).toThrow(ConfigError);
    expect(() => loadGatewayConfig({})).toThrow(/SUBDATA_GATEWAY_TOKEN/);
  });

  it.each([
    ["true", true],
    ["2", 2],
    ["10.0.0.0/8, 127.0.0.1", ["10.0.0.0/8", "127.0.0.1"]],
  ])("reads SUBDATA_TRUST_PROXY=%s", (value, expected) => {
    expect(loadGatewayConfig({ SUBDATA_GATEWAY_TOKEN: token, SUBDATA_TRUST_PROXY: value }).SUBDATA_TRUST_PROXY).toEqual(expected);
  });

  it("refuses a nonsensical SUBDATA_TRUST_PROXY", () => {
    expect(() => loadGatewayConfig({ SUBDATA_GATEWAY_TOKEN: token, SUBDATA_TRUST_PROXY: "everyone!" })).toThrow(/SUBDATA_TRUST_PROXY/);
  });
});
