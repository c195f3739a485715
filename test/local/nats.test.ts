import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNats, natsHelp } from "../../deploy/local/src/nats.ts";
import { startNatsWithoutJetStream, type PlainNats } from "./nats-without-jetstream.ts";

describe("npm start's NATS check (deploy/local/src/nats.ts)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "subdata-nats-"));
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
    const setup = await ensureNats({ url, dataDir, onLog: () => {} });
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

  it("uses a NATS with JetStream as it is", async () => {
    const url = inject("natsUrl");
    expect(await ensureNats({ url, dataDir, onLog: () => {} })).toEqual({ kind: "external", url });
  });
});
