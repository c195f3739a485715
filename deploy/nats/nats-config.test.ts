import { readFileSync } from "node:fs";
import { natsAuthorizationConfig, natsRoles } from "@subdata/events";
import { describe, expect, it } from "vitest";

// The shipped nats-server config must give exactly the permissions the code asks for.
describe("deploy/nats/nats-server.conf", () => {
  const text = readFileSync(new URL("./nats-server.conf", import.meta.url), "utf8");

  it("holds the authorization block natsAuthorizationConfig renders for the default names, passwords from the environment", () => {
    const expected = natsAuthorizationConfig(
      { stream: "SUBDATA_EVENTS", subjectPrefix: "subdata.events", consumer: "webhook-deliveries" },
      {
        relay: { user: "subdata-relay", password: "$NATS_RELAY_PASSWORD" },
        webhook: { user: "subdata-webhook", password: "$NATS_WEBHOOK_PASSWORD" },
        auth: { user: "subdata-auth", password: "$NATS_AUTH_PASSWORD" },
        gateway: { user: "subdata-gateway", password: "$NATS_GATEWAY_PASSWORD" },
      },
    );
    expect(text).toContain(expected);
    expect(text.match(/^authorization:/gm)).toHaveLength(1);
  });

  it("names one user per NATS client and no password in clear", () => {
    for (const role of natsRoles) expect(text).toContain(`user: "subdata-${role}"`);
    expect(text).not.toMatch(/password:\s*"/);
  });
});
