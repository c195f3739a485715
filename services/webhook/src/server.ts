import {
  type ConnectObservability,
  type ConnectServer,
  createConnectServer,
  createHealthState,
  createPageTokenCodec,
  type HealthState,
  type Logger,
  type Pool,
  type CallerCredentials,
} from "@subdata/runtime";
import { createDeliveryQueryRepository } from "./api/delivery-query-repository.ts";
import { createDeliveryScheduleRepository } from "./api/delivery-schedule-repository.ts";
import { createEndpointRepository } from "./api/endpoint-repository.ts";
import { createWebhookRoutes, webhookServiceNames } from "./routes.ts";
import type { SecretBox } from "./secret-box.ts";
import { createUrlPolicy, type ResolveHost } from "./api/url-policy.ts";

export interface WebhookServerDeps {
  /** A pool of the subdata_webhook role. The caller owns it. */
  pool: Pool;
  /** SUBDATA_<CALLER>_TOKEN_SHA256 of the callers it serves; rpc-access.ts decides which RPCs each may call. */
  callers: CallerCredentials;
  /** SUBDATA_PAGE_TOKEN_SECRET: signs page tokens. */
  pageTokenSecret: string;
  /** SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: page tokens they signed are honoured too (rotation). */
  acceptedPageTokenSecrets?: readonly string[];
  /** Seals signing secrets with SUBDATA_WEBHOOK_SECRET_KEY. */
  secretBox: SecretBox;
  /** SUBDATA_WEBHOOK_ALLOW_PRIVATE: http and private targets accepted (local development only). */
  allowPrivate: boolean;
  logger: Logger;
  /** The delivery pipeline, when this process runs one: woken after RPCs schedule deliveries. */
  pipeline?: { wake(): void };
  /** The state grpc.health.v1 reports; main.ts turns it off on SIGTERM. A fresh, serving one by default. */
  health?: HealthState;
  /** Metrics registry and trace scope of the process (main.ts); tests may omit them. */
  observability?: ConnectObservability;
  /** Host name resolution for URL checks (tests inject one); dns.lookup by default. */
  resolveHost?: ResolveHost;
  now?: () => Date;
}

/**
 * The webhook service's RPCs (WebhookEndpointService, WebhookDeliveryService, grpc.health.v1) over h2c,
 * not yet listening: call listen(host, port) — port 0 in tests — and close() to drain.
 */
export function createWebhookServer(deps: WebhookServerDeps): ConnectServer {
  const pipeline = deps.pipeline;
  return createConnectServer({
    routes: createWebhookRoutes({
      endpoints: createEndpointRepository(deps.pool),
      deliveries: createDeliveryQueryRepository(deps.pool),
      schedule: createDeliveryScheduleRepository(deps.pool),
      secretBox: deps.secretBox,
      urlPolicy: createUrlPolicy({ allowPrivate: deps.allowPrivate, resolveHost: deps.resolveHost }),
      pageTokens: createPageTokenCodec(deps.pageTokenSecret, deps.acceptedPageTokenSecrets),
      // Workers also poll, so a lost wake-up only costs latency.
      onScheduled: () => pipeline?.wake(),
      now: deps.now,
    }),
    serviceNames: webhookServiceNames,
    callers: deps.callers,
    logger: deps.logger,
    health: deps.health ?? createHealthState(),
    observability: deps.observability,
  });
}
