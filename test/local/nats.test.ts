import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureNats, findNatsServer, natsAnswers, natsHelp } from "../../deploy/local/src/nats.ts";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe("npm start's NATS check (deploy/local/src/nats.ts)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "subdata-nats-"));
  let plain: ChildProcess | undefined;
  let plainUrl = "";

  beforeAll(async () => {
    const binary = findNatsServer();
    if (!binary) throw new Error("this test needs nats-server (on PATH or in /usr/sbin), as .ci/run installs it");
    const port = await freePort();
    plainUrl = `nats://127.0.0.1:${port}`;
    // No -js: a NATS that answers, without JetStream.
    plain = spawn(binary, ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    const deadline = Date.now() + 15_000;
    while (!(await natsAnswers(plainUrl, 500))) {
      if (Date.now() > deadline) throw new Error(`nats-server did not answer on ${plainUrl}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  afterAll(() => {
    plain?.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("when a NATS answers without JetStream, says so naming NATS_URL and how to fix it, and starts none in its place", async () => {
    const setup = await ensureNats({ url: plainUrl, dataDir, onLog: () => {} });
    expect(setup).toEqual({
      kind: "no-jetstream",
      url: plainUrl,
      reason: `NATS at ${plainUrl} (NATS_URL) answers, but without JetStream: nothing serves the JetStream API (a nats-server started without -js)`,
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
