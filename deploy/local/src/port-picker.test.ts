import { readFileSync } from "node:fs";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { createPortPicker, portBlockCount } from "./port-picker.ts";

const ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

function listenOn(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("the port picker", () => {
  it("hands out ports below the kernel's ephemeral range, each block its own", async () => {
    const blocks = portBlockCount();
    expect(blocks).toBe(Math.floor((ephemeralLow - 10_000) / 1_000));
    const first = createPortPicker(0);
    const last = createPortPicker(blocks - 1);
    const ports = { first: [] as number[], last: [] as number[] };
    for (let i = 0; i < 5; i++) {
      ports.first.push(await first.next());
      ports.last.push(await last.next());
    }
    for (const port of [...ports.first, ...ports.last]) expect(port).toBeLessThan(ephemeralLow);
    expect(new Set([...ports.first, ...ports.last]).size).toBe(10);
    expect(Math.max(...ports.first)).toBeLessThan(11_000);
    expect(Math.min(...ports.last)).toBeGreaterThanOrEqual(10_000 + (blocks - 1) * 1_000);
  });

  it("skips a port something already listens on", async () => {
    // A block no test worker counts through (they take the first ones, the bench the last).
    const block = portBlockCount() - 2;
    const probe = createPortPicker(block);
    const taken = await probe.next();
    const server = await listenOn(taken + 1);
    try {
      const picker = createPortPicker(block);
      expect(await picker.next()).toBe(taken);
      expect(await picker.next()).toBe(taken + 2);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
