export { createAuthServer, type AuthServerDeps } from "./server.ts";
export { createAuthDependencies, type AuthDependencies, type AuthDependencyOptions } from "./dependencies.ts";
export { authRoutes, authServiceNames, type AuthRouteDeps } from "./routes.ts";
export { loadAuthConfig, authConfigShape, type AuthConfig } from "./config.ts";
export {
  API_KEY_REVOKED_SUBJECT,
  createNatsRevocationPublisher,
  type ApiKeyRevocation,
  type RevocationPublisher,
} from "./revocation-publisher.ts";
export { generateApiKey, parseApiKey, verifyChecksum, API_KEY_PREFIX, API_KEY_LENGTH } from "./api-key-format.ts";
export { createApiKeyService, type ApiKeyServiceDeps } from "./api-key-service.ts";
export { createAuditService, type AuditServiceDeps } from "./audit-service.ts";
