import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * A port nothing listens on now (on 127.0.0.1), for a server a test starts later, often in a child
 * process. It cannot stay bound until then, so it is taken below the kernel's ephemeral range: a port
 * that listen(0) picked and let go is the kernel's to hand out again, to the next outbound connection
 * (the tests open hundreds at once) or to another worker's listen(0), before the server binds it
 * (EADDRINUSE). Each vitest worker counts through a block of its own, skipping ports something listens
 * on.
 */
export async function freePort(): Promise<number> {
  const block = ownBlock();
  if (!block) return ephemeralPort();
  for (let tries = 0; tries < BLOCK_SIZE; tries++) {
    const port = block.start + (nextOffset++ % BLOCK_SIZE);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${block.start}–${block.start + BLOCK_SIZE - 1}`);
}

const FIRST_PORT = 10_000;
const BLOCK_SIZE = 1_000;
let nextOffset = 0;

/** This worker's ports, below the ephemeral range; none if that range leaves no room. */
function ownBlock(): { start: number } | undefined {
  const blocks = Math.floor((ephemeralLow() - FIRST_PORT) / BLOCK_SIZE);
  if (blocks < 1) return undefined;
  // 1 to maxWorkers, unique among the workers running at once.
  const worker = Number(process.env.VITEST_POOL_ID ?? "1") || 1;
  return { start: FIRST_PORT + ((worker - 1) % blocks) * BLOCK_SIZE };
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
