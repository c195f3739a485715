// The gateway as a library: main.ts, integration tests and the benchmark build it in-process.
export { createApiKeyCache, type ApiKeyCache } from "./api-key-cache.ts";
export { gatewayConfigShape, loadGatewayConfig } from "./config.ts";
// The document /api/v1/openapi.json serves: @subdata/client is generated from it.
export { createOpenApiDocument } from "./openapi.ts";
export { createRevocationListener } from "./revocation-listener.ts";
export { createGateway, type Gateway } from "./server.ts";
export { createThrottledAuthentications, type ThrottledAuthentications } from "./throttled-authentications.ts";
