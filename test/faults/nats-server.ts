import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A private nats-server with JetStream on a fixed port and a temp store dir, so the suite can stop
 * it (SIGTERM: a clean shutdown, the file store survives) and start it again on the same port.
 */
export interface NatsServer {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Stops and removes the store. */
  dispose(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("data", (chunk) => {
      socket.destroy();
      resolve(chunk.toString("latin1").startsWith("INFO "));
    });
    socket.once("error", () => resolve(false));
  });
}

export function createNatsServer(port: number, binary = process.env.SUBDATA_NATS_SERVER ?? "/usr/sbin/nats-server"): NatsServer {
  const storeDir = mkdtempSync(join(tmpdir(), "subdata-faults-nats-"));
  let child: ChildProcess | undefined;
  const server: NatsServer = {
    url: `nats://127.0.0.1:${port}`,
    async start() {
      child = spawn(binary, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore" });
      const deadline = Date.now() + 15_000;
      while (!(await answers(port))) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error("nats-server did not start");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGTERM");
      await exited;
    },
    async dispose() {
      await server.stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
  return server;
}
