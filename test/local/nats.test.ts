import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { devNatsUsers, loadDevSecrets } from "../../deploy/local/src/dev-secrets.ts";
import { ensureNats, natsHelp } from "../../deploy/local/src/nats.ts";
import { startNatsWithoutJetStream, type PlainNats } from "./nats-without-jetstream.ts";
import { freePort } from "../support/free-port.ts";

describe("npm start's NATS check (deploy/local/src/nats.ts)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "subdata-nats-"));
  const users = devNatsUsers(loadDevSecrets(join(dataDir, "dev.env")).secrets);
  const permissions = { stream: "SUBDATA_EVENTS", subjectPrefix: "subdata.events", consumer: "webhook-deliveries" };
  let plain: PlainNats | undefined;

  beforeAll(async () => {
    plain = await startNatsWithoutJetStream();
  });

  afterAll(async () => {
    await plain?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("when a NATS answers without JetStream, says so naming NATS_URL and how to fix it, and starts none in its place", async () => {
    const url = plain?.url ?? "";
    const setup = await ensureNats({ url, dataDir, users, permissions, onLog: () => {} });
    expect(setup).toEqual({
      kind: "no-jetstream",
      url,
      reason: `NATS at ${url} (NATS_URL) answers, but without JetStream: nothing serves the JetStream API (a nats-server started without -js)`,
    });
    const help = natsHelp(setup).join("\n");
    expect(help).toContain("the webhook service and the outbox relay are skipped");
    expect(help).toContain("nats-server -js");
    expect(help).toContain("NATS_URL");
  });

  it("when no NATS answers at a URL that is not local, says so naming the URL and how to get one, and starts none", async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers there.
    const url = "nats://192.0.2.1:4222";
    const setup = await ensureNats({ url, dataDir, users, permissions, onLog: () => {} });
    expect(setup).toEqual({ kind: "missing", url, reason: `no NATS answers at ${url} (not a local address, so none is started)` });
    const help = natsHelp(setup).join("\n");
    expect(help).toContain("the webhook service and the outbox relay are skipped");
    expect(help).toContain("apt-get install nats-server");
    expect(help).toContain("NATS_URL");
  });

  it("uses a NATS with JetStream as it is", async () => {
    const url = inject("natsUrl");
    expect(await ensureNats({ url, dataDir, users, permissions, onLog: () => {} })).toEqual({ kind: "external", url });
  });

  it("when nothing answers at a local URL, starts a nats-server that admits only the stack's users, each with its password", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const setup = await ensureNats({ url, dataDir, users, permissions, onLog: () => {} });
    expect(setup.kind).toBe("started");
    try {
      await expect(connect({ servers: url, maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization/i);
      await expect(connect({ servers: url, user: users.relay.user, pass: users.gateway.password, maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization/i);
      for (const role of ["relay", "webhook", "auth", "gateway"] as const) {
        const nc = await connect({ servers: url, user: users[role].user, pass: users[role].password, maxReconnectAttempts: 0 });
        await nc.close();
      }
      // Asked again while it runs, the launcher finds it and checks JetStream as the relay.
      expect(await ensureNats({ url, dataDir, users, permissions, onLog: () => {} })).toEqual({ kind: "external", url });
    } finally {
      if (setup.kind === "started") await setup.stop();
    }
  });
});
