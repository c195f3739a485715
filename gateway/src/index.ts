// The gateway as a library: main.ts, integration tests and the benchmark build it in-process.
export { createApiKeyCache, digestOfKey, type ApiKeyCache, type VerifiedKey } from "./api-key-cache.ts";
export { gatewayConfigShape, loadGatewayConfig, type GatewayConfig } from "./config.ts";
export { createOpenApiDocument } from "./openapi.ts";
export { API_KEY_REVOKED_SUBJECT, createRevocationListener, type RevocationListener } from "./revocation-listener.ts";
export { API_PREFIX, createGateway, type Clock, type Gateway, type GatewayClients, type GatewayDeps, type GatewaySettings } from "./server.ts";
export { createUpstreamClients, type UpstreamClients } from "./upstream-clients.ts";
export { LIVENESS_PATH, READINESS_PATH, registerHttpMetrics, registerProbes, routeLabel, traceRequests } from "./observability.ts";
