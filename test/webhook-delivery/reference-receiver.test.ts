import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, deliveryOf, type Harness, newSubscriptionId, waitFor } from "./support/harness.ts";

const script = fileURLToPath(new URL("../../docs/examples/webhook-receiver.ts", import.meta.url));

describe("the reference receiver (docs/examples/webhook-receiver.ts)", () => {
  let h: Harness;
  let receiver: ChildProcess;
  const lines: string[] = [];
  let origin = "";

  beforeAll(async () => {
    h = await createHarness("reference");
  });
  afterAll(async () => {
    receiver?.kill();
    await h.close();
  });

  it("verifies a real delivery, ignores a repeat of it, and rejects a bad signature with 400", async () => {
    const merchantId = await h.fixtures.merchant();
    const { generateSigningSecret } = await import("@subdata/webhook");
    const secret = generateSigningSecret();
    receiver = spawn(process.execPath, ["--import", "tsx", script], {
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: "0", HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    receiver.stdout!.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
    origin = await waitFor("the receiver to listen", () => lines.map((line) => /^listening on (\S+)$/.exec(line)?.[1]).find(Boolean));

    const endpoint = await h.createEndpoint({ merchantId, url: `${origin}/webhooks`, secret });
    h.startPipeline();
    const subscriptionId = newSubscriptionId();
    const event = await h.publish({ merchantId, subscriptionId, version: 1 });
    await waitFor("the receiver to print the event", () => lines.includes(`subscription.created ${subscriptionId} version 1`));
    await waitFor("SUCCEEDED", async () => (await deliveryOf(h.admin, endpoint.id, event.id))?.status === "SUCCEEDED");

    // As ResendEvent does: the same event again, same webhook-id.
    await h.admin.query("UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = now() WHERE endpoint_id = $1 AND event_id = $2", [
      endpoint.id,
      event.id,
    ]);
    await waitFor("the repeat to be recognised", () => lines.includes(`duplicate ${event.id} ignored`));

    const forged = await fetch(`${origin}/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "webhook-id": "evt_forged",
        "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")}`,
      },
      body: JSON.stringify({ id: "evt_forged", type: "subscription.deleted", data: { object: { id: "sub_x", version: 9 } } }),
    });
    expect(forged.status).toBe(400);
    await waitFor("the rejection to be printed", () => lines.some((line) => line.startsWith("rejected:")));
    expect(lines.filter((line) => line.includes("evt_forged") || line.includes("sub_x"))).toEqual([]);
  });
});
