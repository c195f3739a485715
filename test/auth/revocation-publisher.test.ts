import net from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { connect } from "@nats-io/transport-node";
import { createNatsRevocationPublisher } from "@subdata/auth";
import { apiKeyRevokedSubject } from "@subdata/events";
import { ApiKeyRevokedEventSchema } from "@subdata/proto/subdata/events/v1/api_key_event_pb";
import { expect, inject, it } from "vitest";
import { createCapturedLogger } from "@subdata/runtime/test-support";
import { freePort } from "../support/free-port.ts";

async function until(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 200 && !condition(); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(condition()).toBe(true);
}

it("retries a revocation published while NATS was unreachable, and delivers it once NATS answers", async () => {
  const { logger, lines: logs } = createCapturedLogger({ name: "publisher-test" });
  const natsUrl = new URL(inject("natsUrl"));
  const port = await freePort();
  const publisher = createNatsRevocationPublisher({ servers: `nats://127.0.0.1:${port}`, logger, retryDelayMs: 100 });
  const listener = await connect({ servers: inject("natsUrl") });
  const apiKeyId = `key_retry_${inject("runId")}`;
  const received: string[] = [];
  const subscription = listener.subscribe(apiKeyRevokedSubject);
  void (async () => {
    for await (const message of subscription) received.push(fromBinary(ApiKeyRevokedEventSchema, message.data).apiKeyId);
  })();
  await listener.flush();

  // Nothing listens on `port` yet: the publish fails and stays queued.
  publisher.publish({ apiKeyId, merchantId: "mer_retry", revokedAt: timestampFromMs(Date.now()) });
  await until(() => logs.some((line) => line.includes("could not publish revocation events")));

  // NATS "comes back": a TCP relay to the real server appears on that port.
  const relay = net.createServer((client) => {
    const upstream = net.connect(Number(natsUrl.port || 4222), natsUrl.hostname);
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(port, "127.0.0.1", resolve));
  try {
    await until(() => received.includes(apiKeyId));
    await until(() => logs.some((line) => line.includes("published after retrying")));
  } finally {
    await publisher.close();
    await listener.close();
    relay.close();
  }
});
