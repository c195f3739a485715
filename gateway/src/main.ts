import { createLogger, handleShutdown } from "@subdata/runtime";
import { createApiKeyCache } from "./api-key-cache.ts";
import { loadGatewayConfig } from "./config.ts";
import { createRevocationListener } from "./revocation-listener.ts";
import { createGateway } from "./server.ts";
import { createUpstreamClients } from "./upstream-clients.ts";

// Wiring only: config → upstream clients, key cache + revocation listener, gateway; SIGTERM drains.
const config = loadGatewayConfig(process.env);
const logger = createLogger({ name: "gateway", level: config.LOG_LEVEL });
const upstream = createUpstreamClients({
  queryUrl: config.SUBDATA_QUERY_URL,
  authUrl: config.SUBDATA_AUTH_URL,
  serviceToken: config.SUBDATA_SERVICE_TOKEN,
});
const apiKeyCache = createApiKeyCache({
  ttlMs: config.SUBDATA_API_KEY_CACHE_TTL_SECONDS * 1000,
  maxEntries: config.SUBDATA_API_KEY_CACHE_MAX_ENTRIES,
  now: Date.now,
});
const revocations = createRevocationListener({ natsUrl: config.NATS_URL, cache: apiKeyCache, logger });
const gateway = createGateway({ clients: upstream.clients, logger, config, apiKeyCache });

revocations.start();
const address = await gateway.listen({ host: config.HOST, port: config.PORT });
logger.info({ address }, "gateway listening");

handleShutdown({
  logger,
  steps: [
    { name: "http", run: () => gateway.close() },
    { name: "nats", run: () => revocations.close() },
    { name: "upstream", run: () => upstream.close() },
  ],
});
