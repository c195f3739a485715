import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { findNatsServer, natsAnswers } from "../../deploy/local/src/nats.ts";
import { freePort } from "../support/free-port.ts";

export interface PlainNats {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real NATS started without `-js`: the local nats-server binary on a free port, or, where there is
 * none but a Docker engine answers (as test/global-setup.ts allows), the nats:2.9 image without `-js`.
 */
export async function startNatsWithoutJetStream(): Promise<PlainNats> {
  const binary = findNatsServer();
  if (binary) {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    const child = spawn(binary, ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    for (let tries = 0; !(await natsAnswers(url, 500)); tries++) {
      if (tries > 100 || child.exitCode !== null) throw new Error(`${binary} without -js did not answer on ${url}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return {
      url,
      async stop() {
        child.kill("SIGKILL");
        await exited;
      },
    };
  }
  if (process.env.DOCKER_HOST || existsSync("/var/run/docker.sock")) {
    const { GenericContainer, Wait } = await import("testcontainers");
    const container = await new GenericContainer("nats:2.9")
      .withCommand(["-p", "4222"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    return {
      url: `nats://${container.getHost()}:${container.getMappedPort(4222)}`,
      async stop() {
        await container.stop();
      },
    };
  }
  throw new Error("this test needs a NATS without JetStream: install nats-server (apt-get install nats-server), or run a Docker engine");
}
