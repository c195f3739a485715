import net from "node:net";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { createLogger } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { createNatsRevocationPublisher } from "./revocation-publisher.ts";

/** A port nothing listens on: every connection attempt is refused. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the revocation publisher", () => {
  it("queues at most maxPending events while NATS is unreachable, dropping the oldest", async () => {
    const publisher = createNatsRevocationPublisher({
      servers: `nats://127.0.0.1:${await closedPort()}`,
      logger: createLogger({ name: "test", level: "silent" }),
      retryDelayMs: 50,
      maxPending: 3,
    });
    try {
      for (let index = 0; index < 10; index++) publisher.publish({ apiKeyId: `key_${index}`, merchantId: "mer_1", revokedAt: timestampNow() });
      expect(publisher.queued).toBe(3);
    } finally {
      await publisher.close();
    }
  });
});
