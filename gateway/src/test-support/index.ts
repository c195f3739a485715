// The gateway as tests outside its workspace build it: a gateway over fake upstreams, and the OpenAPI validator.
export { createOpenApiValidator } from "./openapi-validator.ts";
export { createTestGateway, KEY } from "./test-gateway.ts";
