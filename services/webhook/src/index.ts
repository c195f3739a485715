// The webhook service as a library: integration tests and deploy/local start it in-process.
export { loadWebhookConfig, webhookConfigShape, type WebhookConfig } from "./config.ts";
export { createWebhookServer, type WebhookServerDeps } from "./server.ts";
export { createWebhookRoutes, webhookServiceNames, type WebhookRoutesDeps } from "./routes.ts";
export { createEndpointService, type EndpointServiceDeps } from "./endpoint-service.ts";
export { createDeliveryService, type DeliveryServiceDeps } from "./delivery-service.ts";
export { createEndpointRepository, type EndpointRepository } from "./endpoint-repository.ts";
export { createDeliveryQueryRepository, type DeliveryQueryRepository } from "./delivery-query-repository.ts";
export { createDeliveryScheduleRepository, type DeliveryScheduleRepository } from "./delivery-schedule-repository.ts";
export { createUrlPolicy, type UrlPolicy, type ResolveHost } from "./url-policy.ts";
export { createSecretBox, generateSigningSecret, type SecretBox } from "./secret-box.ts";
