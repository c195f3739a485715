export { createAuthServer } from "./server.ts";
export { createAuthDependencies, type AuthDependencies } from "./dependencies.ts";
export { authConfigShape } from "./config.ts";
export { createNatsRevocationPublisher } from "./revocation-publisher.ts";
export { generateApiKey } from "./api-key-format.ts";
