import net from "node:net";
import { describe, expect, it } from "vitest";
import { BENCH_PORT_BLOCK, createPortPicker, ephemeralPortLow, portBlock, portBlockCount } from "./port-picker.ts";

function listenOn(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("the port picker", () => {
  it("cuts the ports below the kernel's ephemeral range into blocks of 200, and refuses a block past them", () => {
    const count = portBlockCount();
    expect(count).toBe(Math.floor((ephemeralPortLow() - 10_000) / 200));
    expect(portBlock(BENCH_PORT_BLOCK)).toEqual({ first: 10_000, last: 10_199 });
    expect(portBlock(1)).toEqual({ first: 10_200, last: 10_399 });
    expect(portBlock(count - 1).last).toBeLessThan(ephemeralPortLow());
    expect(() => portBlock(count)).toThrow(RangeError);
    expect(() => portBlock(-1)).toThrow(RangeError);
  });

  // Real ports only in this worker's own block (VITEST_POOL_ID): no other process picks from it now.
  const ownBlock = Number(process.env.VITEST_POOL_ID ?? "1") || 1;

  it("hands out ports of its block, and skips one something listens on", async () => {
    const { first, last } = portBlock(ownBlock);
    const picker = createPortPicker(ownBlock);
    const held = await picker.next();
    const server = await listenOn(held);
    try {
      // A whole round of the block and one more: the count passes the held port again, and skips it.
      const handed: number[] = [];
      for (let i = 0; i < 201; i++) handed.push(await picker.next());
      for (const port of [held, ...handed]) {
        expect(port).toBeGreaterThanOrEqual(first);
        expect(port).toBeLessThanOrEqual(last);
      }
      expect(handed).not.toContain(held);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("never hands out a port fetch refuses (10080, in the bench's block)", async () => {
    const picker = createPortPicker(BENCH_PORT_BLOCK);
    const handed: number[] = [];
    for (let i = 0; i < 200; i++) handed.push(await picker.next());
    expect(handed).not.toContain(10_080);
    await expect(fetch("http://127.0.0.1:10080/")).rejects.toMatchObject({ cause: { message: "bad port" } });
  });
});
