import { get } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus } from "@subdata/proto/grpc/health/v1/health_pb";
import { createServiceTransport } from "@subdata/runtime";

export interface WaitOptions {
  timeoutMs: number;
  /** Stops waiting early (the process exited, the launcher is shutting down). */
  gaveUp(): boolean;
}

const POLL_MS = 250;
/** How long one check may take before it counts as a "no". */
const CHECK_MS = 2_000;

/** One grpc.health.v1 Check over Connect; true when the process answers SERVING. */
export async function grpcHealthServing(baseUrl: string, serviceToken: string): Promise<boolean> {
  const { transport, close } = createServiceTransport({ baseUrl, serviceToken });
  try {
    const response = await createClient(Health, transport).check({ service: "" }, { timeoutMs: CHECK_MS });
    return response.status === HealthCheckResponse_ServingStatus.SERVING;
  } catch {
    return false;
  } finally {
    close();
  }
}

/**
 * One GET (node:http, a connection of its own); a status below 500 means the HTTP server is up and
 * routing. Not fetch: a probe of a local server must not refuse the ports a browser may not call
 * (fetch answers "bad port" for 10080, and a server there would never look ready).
 */
export function httpAnswers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get(url, { agent: false, timeout: CHECK_MS }, (response) => {
      response.resume();
      resolve((response.statusCode ?? 500) < 500);
    });
    request.on("timeout", () => request.destroy());
    request.on("error", () => resolve(false));
  });
}

/** Polls `check` until it is true; false when the time ran out or `gaveUp()`. */
export async function waitFor(check: () => Promise<boolean>, options: WaitOptions): Promise<boolean> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline && !options.gaveUp()) {
    if (await check()) return true;
    await sleep(POLL_MS);
  }
  return false;
}
