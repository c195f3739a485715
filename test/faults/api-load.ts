import type { FaultStack } from "./stack.ts";
import type { Tenant } from "./tenant.ts";

/**
 * Steady read traffic through the gateway with one tenant's key, recording every response: status,
 * Request-Id and whether a 503 leaked data. Runs until stopped.
 */
export interface ServedResponse {
  status: number;
  requestId: string;
  /** A non-200 whose body carried list or object data. */
  leakedData: boolean;
}

export interface ApiLoad {
  responses: ServedResponse[];
  stop(): Promise<void>;
}

export function startApiLoad(stack: FaultStack, tenant: Tenant, concurrency = 2): ApiLoad {
  const responses: ServedResponse[] = [];
  let running = true;
  const paths = [`/api/v1/subscriptions?limit=5`, `/api/v1/subscriptions/${tenant.subscriptionIds[0]}`, `/api/v1/orders?limit=2`];
  const worker = async (offset: number) => {
    for (let index = offset; running; index++) {
      try {
        const response = await fetch(`${stack.gatewayUrl}${paths[index % paths.length]}`, {
          headers: { authorization: `Bearer ${tenant.key}` },
          signal: AbortSignal.timeout(20_000),
        });
        const text = await response.text();
        let leakedData = false;
        if (response.status !== 200) {
          try {
            const body = JSON.parse(text) as Record<string, unknown>;
            leakedData = "data" in body || "object" in body;
          } catch {
            leakedData = text.length > 0;
          }
        }
        responses.push({ status: response.status, requestId: response.headers.get("request-id") ?? "", leakedData });
      } catch {
        // A refused or cut connection served nothing; pause briefly so a dead gateway is not spun on.
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  const workers = Array.from({ length: concurrency }, (_, offset) => worker(offset));
  return {
    responses,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}
