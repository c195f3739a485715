import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * Ports nothing listens on now (on 127.0.0.1), for servers started later, often in child processes.
 * A port cannot stay bound until then, so it is taken below the kernel's ephemeral range: a port that
 * listen(0) picked and let go is the kernel's to hand out again, to the next outbound connection (a
 * stack opens hundreds: pools, NATS, the load generator) or to another process's listen(0), before the
 * server binds it (EADDRINUSE).
 *
 * The ports from 10,000 up to the ephemeral range are cut into blocks of 200, one per picker that may
 * run at once: block 0 is the bench's (BENCH_PORT_BLOCK), block n vitest worker n's (VITEST_POOL_ID,
 * 1 to maxWorkers). A picker counts through its block from a random place, skipping ports something
 * listens on and ports fetch refuses, so two pickers never hand out the same port and two runs of one
 * block seldom do.
 */
export interface PortPicker {
  next(): Promise<number>;
}

export const BENCH_PORT_BLOCK = 0;

const FIRST_PORT = 10_000;
const BLOCK_SIZE = 200;

/**
 * The ports of the Fetch standard's port-blocking list that lie in the blocks: fetch (undici) refuses
 * them ("fetch failed", cause "bad port"), so a server there is unreachable for every fetch the bench,
 * the tests and the launcher's callers make.
 */
const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([10_080]);

/** The lowest port the kernel hands out on its own (Linux; its default elsewhere). */
export function ephemeralPortLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** How many blocks fit below the ephemeral range (0 when none does: pickers then use listen(0)). */
export function portBlockCount(): number {
  return Math.max(0, Math.floor((ephemeralPortLow() - FIRST_PORT) / BLOCK_SIZE));
}

/** The ports of block `index`, first and last. */
export function portBlock(index: number): { first: number; last: number } {
  const count = portBlockCount();
  if (!Number.isInteger(index) || index < 0 || index >= count)
    throw new RangeError(`port block ${index}: the ports from ${FIRST_PORT} to the ephemeral range (${ephemeralPortLow()}) hold blocks 0–${count - 1}`);
  const first = FIRST_PORT + index * BLOCK_SIZE;
  return { first, last: first + BLOCK_SIZE - 1 };
}

/** A picker over block `index`; over listen(0) when no block fits below the ephemeral range. */
export function createPortPicker(index: number): PortPicker {
  if (portBlockCount() === 0) return { next: ephemeralPort };
  const { first, last } = portBlock(index);
  let offset = randomInt(BLOCK_SIZE);
  return {
    async next() {
      for (let tries = 0; tries < BLOCK_SIZE; tries++) {
        const port = first + (offset++ % BLOCK_SIZE);
        if (!FETCH_BLOCKED_PORTS.has(port) && (await canListen(port))) return port;
      }
      throw new Error(`no free port in ${first}–${last}`);
    },
  };
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
