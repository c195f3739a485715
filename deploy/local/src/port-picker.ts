import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * Ports nothing listens on now (on 127.0.0.1), for servers started later, often in child processes.
 * A port cannot stay bound until then, so it is taken below the kernel's ephemeral range: a port that
 * listen(0) picked and let go is the kernel's to hand out again, to the next outbound connection (a
 * stack opens hundreds: pools, NATS, the load generator) or to another process's listen(0), before the
 * server binds it (EADDRINUSE).
 *
 * The range from 10,000 to the ephemeral range is cut into blocks of 1,000; each picker counts through
 * the block it is given, skipping ports something listens on, so pickers of different blocks (the test
 * workers, the bench) never hand out the same port.
 */
export interface PortPicker {
  next(): Promise<number>;
}

const FIRST_PORT = 10_000;
const BLOCK_SIZE = 1_000;

/** How many blocks fit below the ephemeral range (0 when none does: pickers then use listen(0)). */
export function portBlockCount(): number {
  return Math.max(0, Math.floor((ephemeralLow() - FIRST_PORT) / BLOCK_SIZE));
}

/** A picker over block `index` (taken modulo portBlockCount()). */
export function createPortPicker(index: number): PortPicker {
  const blocks = portBlockCount();
  if (blocks < 1) return { next: ephemeralPort };
  const start = FIRST_PORT + (((index % blocks) + blocks) % blocks) * BLOCK_SIZE;
  let nextOffset = 0;
  return {
    async next() {
      for (let tries = 0; tries < BLOCK_SIZE; tries++) {
        const port = start + (nextOffset++ % BLOCK_SIZE);
        if (await canListen(port)) return port;
      }
      throw new Error(`no free port in ${start}–${start + BLOCK_SIZE - 1}`);
    },
  };
}

/** The lowest port the kernel hands out on its own (Linux; its default elsewhere). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

function ephemeralPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
