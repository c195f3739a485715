// The webhook service as a library: integration tests and deploy/local start it in-process.
export { loadWebhookConfig, webhookConfigShape, type WebhookConfig } from "./config.ts";
export { createWebhookServer, type WebhookServerDeps } from "./server.ts";
export { createWebhookRoutes, webhookServiceNames, type WebhookRoutesDeps } from "./routes.ts";
export { createEndpointService, type EndpointServiceDeps } from "./api/endpoint-service.ts";
export { createDeliveryService, type DeliveryServiceDeps } from "./api/delivery-service.ts";
export { createEndpointRepository, type EndpointRepository } from "./api/endpoint-repository.ts";
export { createDeliveryQueryRepository, type DeliveryQueryRepository } from "./api/delivery-query-repository.ts";
export { createDeliveryScheduleRepository, type DeliveryScheduleRepository } from "./api/delivery-schedule-repository.ts";
export { createUrlPolicy, type UrlPolicy, type ResolveHost } from "./api/url-policy.ts";
export { createSecretBox, generateSigningSecret, type SecretBox } from "./secret-box.ts";
