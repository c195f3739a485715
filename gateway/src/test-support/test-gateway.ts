import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { createLogger } from "@subdata/runtime";
import { type ApiKeyCache, createApiKeyCache } from "../api-key-cache.ts";
import { loadGatewayConfig } from "../config.ts";
import { createGateway, type Gateway } from "../server.ts";
import { createFakeUpstreams, type FakeUpstreams } from "./fake-upstreams.ts";

/** A gateway over fake upstreams, with a settable clock and every log line captured. */
export interface TestGateway {
  gateway: Gateway;
  fake: FakeUpstreams;
  cache: ApiKeyCache;
  clock: { now(): number; advance(ms: number): void };
  logs: string[];
}

export const MERCHANT = "mer_a";
export const OTHER_MERCHANT = "mer_b";
export const KEY = "sds_0123456789abcdefghijABCDEFGHIJ01abcdef";
export const KEY_ID = "key_a";

export function createTestGateway(environment: NodeJS.ProcessEnv = {}): TestGateway {
  let time = Date.UTC(2026, 5, 1);
  const clock = {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const logger = createLogger({ name: "gateway", level: "debug", destination });
  const fake = createFakeUpstreams();
  fake.keys.set(KEY, { apiKeyId: KEY_ID, merchantId: MERCHANT });
  const config = loadGatewayConfig({ SUBDATA_GATEWAY_TOKEN: randomBytes(24).toString("base64url"), ...environment });
  const cache = createApiKeyCache({ ttlMs: 60_000, maxEntries: 100, now: clock.now });
  // Unit tests stand in for a live revocation subscription.
  cache.setTrusted(true);
  const gateway = createGateway({ clients: fake.clients, logger, config, apiKeyCache: cache, clock });
  return { gateway, fake, cache, clock, logs };
}
