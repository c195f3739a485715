import net from "node:net";
import { freePort } from "../support/free-port.ts";

/**
 * A TCP fault proxy on 127.0.0.1 in front of one upstream (Postgres, NATS, a webhook receiver). The
 * mode is switchable at runtime and applies to new connections and, for the breaking modes, to the
 * ones already open:
 * - pass: bytes flow both ways;
 * - latency: every chunk waits `ms` before being forwarded;
 * - blackhole: connections are accepted, nothing is forwarded or answered (open ones go silent too);
 * - reset: new and open connections are reset (RST);
 * - refuse: the listener closes, so connecting fails with ECONNREFUSED; open connections are reset.
 */
export type FaultMode = { kind: "pass" } | { kind: "latency"; ms: number } | { kind: "blackhole" } | { kind: "reset" } | { kind: "refuse" };

export interface FaultProxy {
  readonly port: number;
  /** host:port of the proxy, for building URLs. */
  readonly address: string;
  readonly mode: FaultMode;
  set(mode: FaultMode): Promise<void>;
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
}

function listen(server: net.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

/**
 * Listens on a port from the worker's block below the kernel's ephemeral range (free-port.ts), the
 * block the suite's services take theirs from, so the two never pick the same one. "refuse" closes the
 * listener and "pass" binds the same port again: a port from the ephemeral range (what listen(0) gives)
 * could meanwhile become the source port of any outgoing connection on the machine, and the re-bind
 * then fail with EADDRINUSE (seen in CI). A port taken between the pick and the bind is skipped.
 */
async function listenOutsideEphemeralRange(server: net.Server): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await listen(server, await freePort());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt >= 10) throw error;
    }
  }
}

export async function startFaultProxy(upstream: { host: string; port: number }, initial: FaultMode = { kind: "pass" }): Promise<FaultProxy> {
  let mode: FaultMode = initial;
  const pairs = new Set<Pair>();

  const forward = (from: net.Socket, to: net.Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (mode.kind === "blackhole") return; // swallowed: the peer waits forever
      if (mode.kind === "latency") {
        from.pause();
        setTimeout(() => {
          if (!to.destroyed) to.write(chunk);
          from.resume();
        }, mode.ms);
        return;
      }
      if (!to.destroyed) to.write(chunk);
    });
    from.on("end", () => to.end());
  };

  const onConnection = (client: net.Socket) => {
    if (mode.kind === "reset" || mode.kind === "refuse") {
      client.resetAndDestroy();
      return;
    }
    const target = net.connect(upstream.port, upstream.host);
    const pair = { client, upstream: target };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      if (!client.destroyed) client.resetAndDestroy();
      if (!target.destroyed) target.destroy();
    };
    client.on("error", drop);
    target.on("error", drop);
    client.on("close", drop);
    target.on("close", drop);
    forward(client, target);
    forward(target, client);
  };

  let server = net.createServer(onConnection);
  const port = await listenOutsideEphemeralRange(server);

  const resetOpen = () => {
    for (const pair of pairs) {
      if (!pair.client.destroyed) pair.client.resetAndDestroy();
      if (!pair.upstream.destroyed) pair.upstream.destroy();
    }
    pairs.clear();
  };

  return {
    port,
    address: `127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    async set(next) {
      const wasListening = server.listening;
      mode = next;
      if (next.kind === "reset" || next.kind === "refuse") resetOpen();
      if (next.kind === "refuse" && wasListening) {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      } else if (next.kind !== "refuse" && !wasListening) {
        // Same port again, so the services' configured URLs stay valid.
        server = net.createServer(onConnection);
        await listen(server, port);
      }
    },
    async close() {
      resetOpen();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
