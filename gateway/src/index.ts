// The gateway as a library: main.ts, integration tests and the benchmark build it in-process.
export { createApiKeyCache, type ApiKeyCache } from "./api-key-cache.ts";
export { gatewayConfigShape, loadGatewayConfig } from "./config.ts";
export { API_KEY_REVOKED_SUBJECT, createRevocationListener } from "./revocation-listener.ts";
export { createGateway, type Gateway } from "./server.ts";
