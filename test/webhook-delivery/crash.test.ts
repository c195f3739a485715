import type { ChildProcess } from "node:child_process";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { attemptsOf, createHarness, deliveryOf, type Harness, newSubscriptionId, waitFor } from "./support/harness.ts";
import { type Receiver, startReceiver, webhookHeaders } from "./support/receiver.ts";
import { startPipelineProcess } from "./support/pipeline-child.ts";

describe("a webhook service killed mid-delivery", () => {
  let h: Harness;
  let r: Receiver;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    h = await createHarness("crash");
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    await h.close();
    await r?.close();
  });

  it("still delivers: the claimed delivery is retried by the next pipeline, with the same webhook-id", async () => {
    const merchantId = await h.fixtures.merchant();
    // The first request is held open (the process dies while waiting); later ones succeed.
    r = await startReceiver((_request, index) => (index === 0 ? new Promise(() => {}) : { status: 200 }));
    const endpoint = await h.createEndpoint({ merchantId, url: r.origin });
    const lease = { leaseMs: 2_000 };
    child = await startPipelineProcess({
      DATABASE_URL: h.webhookDatabaseUrl,
      NATS_URL: inject("natsUrl"),
      SUBDATA_WEBHOOK_SECRET_KEY: h.secretKey,
      PIPELINE_SETTINGS: JSON.stringify(h.settings({ ...lease, requestTimeoutMs: 60_000 })),
    });
    const event = await h.publish({ merchantId, subscriptionId: newSubscriptionId(), version: 1 });

    await waitFor("the first request to arrive", () => r.requests.length === 1);
    const exited = new Promise((resolve) => child!.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    child = undefined;
    const claimed = await deliveryOf(h.admin, endpoint.id, event.id);
    expect(claimed).toMatchObject({ status: "PENDING", attempt_count: 1 });

    h.startPipeline(lease);
    const delivery = await waitFor("SUCCEEDED", async () => {
      const d = await deliveryOf(h.admin, endpoint.id, event.id);
      return d?.status === "SUCCEEDED" ? d : undefined;
    });
    expect(r.requests).toHaveLength(2);
    expect(r.requests.map((q) => q.headers["webhook-id"])).toEqual([event.id, event.id]);
    expect(r.requests[1]!.body).toBe(r.requests[0]!.body);
    expect(new Webhook(endpoint.secret).verify(r.requests[1]!.body, webhookHeaders(r.requests[1]!))).toBeTruthy();
    // The killed attempt counted but left no log line; the retry is attempt 2.
    expect(delivery.attempt_count).toBe(2);
    expect(await attemptsOf(h.admin, delivery.id)).toMatchObject([{ attempt_number: 2, response_status: 200, error_class: "NONE" }]);
  });
});
