import { createClient } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus } from "@subdata/proto/grpc/health/v1/health_pb";
import { createServiceTransport } from "@subdata/runtime";

export interface WaitOptions {
  timeoutMs: number;
  /** Stops waiting early (the process exited, the launcher is shutting down). */
  gaveUp(): boolean;
}

const POLL_MS = 250;

/** One grpc.health.v1 Check over Connect; true when the process answers SERVING. */
export async function grpcHealthServing(baseUrl: string, serviceToken: string): Promise<boolean> {
  const { transport, close } = createServiceTransport({ baseUrl, serviceToken });
  try {
    const response = await createClient(Health, transport).check({ service: "" }, { timeoutMs: 2_000 });
    return response.status === HealthCheckResponse_ServingStatus.SERVING;
  } catch {
    return false;
  } finally {
    close();
  }
}

/** One GET; a status below 500 means the HTTP server is up and routing. */
export async function httpAnswers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.status < 500;
  } catch {
    return false;
  }
}

/** Polls `check` until it is true; false when the time ran out or `gaveUp()`. */
export async function waitFor(check: () => Promise<boolean>, options: WaitOptions): Promise<boolean> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline && !options.gaveUp()) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return false;
}
