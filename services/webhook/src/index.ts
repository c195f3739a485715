// The webhook service as a library: the CLI (secret box, config shape), the deploy checks and the integration tests build it in-process.
export { webhookConfigShape } from "./config.ts";
export { createWebhookServer } from "./server.ts";
export { createUrlPolicy } from "./api/url-policy.ts";
export { createSecretBox, generateSigningSecret, type RekeyingSecretBox, type SecretBox } from "./secret-box.ts";
export { createDeliveryPipeline, type DeliveryPipeline } from "./pipeline.ts";
export { createRefusedEventMetric } from "./ingest/consumer-metrics.ts";
export { deliveryPipelineConfigShape, type DeliveryPipelineSettings } from "./pipeline-config.ts";
