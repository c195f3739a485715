import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import fastifyCompress from "@fastify/compress";
import type { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import type { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import type { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import type { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import type { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { createHealthState, type HealthState, type Logger, type Registry, type TraceScope, type Tracing } from "@subdata/runtime";
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from "fastify";
import type { ApiKeyCache } from "./api-key-cache.ts";
import { auditRefusalOf, createAuditRecorder } from "./audit-recorder.ts";
import { createAuditRefusalLog } from "./audit-refusal-log.ts";
import { createAuthFailureLimiter } from "./auth-failure-limiter.ts";
import { createAuthenticate } from "./authenticate.ts";
import { createThrottledAuthentications, type ThrottledAuthentications } from "./throttled-authentications.ts";
import type { GatewayConfig } from "./config.ts";
import { paramErrorsOf, parseQueryString, prepareQuery, type ValidationIssue } from "./list-params.ts";
import { auditMetrics, registerHttpMetrics, registerProbes, traceRequests } from "./observability.ts";
import { createOpenApiDocument } from "./openapi.ts";
import { problemBody, ProblemError, toProblem, wwwAuthenticate } from "./problem.ts";
import { createRateLimiter } from "./rate-limiter.ts";
import { createRoutes } from "./routes.ts";
import { createWaitingReads, type WaitingReads } from "./waiting-reads.ts";
import { type JsonSchema, openApiDocumentQuerySchema } from "./schemas.ts";
import "./request-context.ts";

/** Typed Connect clients of the four upstream services. */
export interface GatewayClients {
  subscriptions: Client<typeof SubscriptionService>;
  orders: Client<typeof OrderService>;
  events: Client<typeof EventService>;
  waitingEvents: Client<typeof EventService>;
  apiKeys: Client<typeof ApiKeyService>;
  audit: Client<typeof AuditService>;
}

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export type GatewaySettings = Pick<
  GatewayConfig,
  | "SUBDATA_UPSTREAM_TIMEOUT_MS"
  | "SUBDATA_RATE_LIMIT_QUOTA"
  | "SUBDATA_RATE_LIMIT_WINDOW_SECONDS"
  | "SUBDATA_GZIP_THRESHOLD_BYTES"
  | "SUBDATA_TRUST_PROXY"
  | "SUBDATA_AUTH_FAILURE_QUOTA"
  | "SUBDATA_AUTH_FAILURE_WINDOW_SECONDS"
  | "SUBDATA_AUTH_FAILURE_MAX_CLIENTS"
  | "SUBDATA_FEED_MAX_WAITING"
  | "SUBDATA_FEED_MAX_WAITING_PER_KEY"
  | "SUBDATA_AUDIT_QUEUE_MAX"
  | "SUBDATA_AUDIT_QUEUE_WAIT_MS"
>;

export interface GatewayDeps {
  clients: GatewayClients;
  logger: Logger;
  config: GatewaySettings;
  /** Verified keys; shared with the revocation listener, which decides when it may be trusted. */
  apiKeyCache: ApiKeyCache;
  clock?: Clock;
  /** RED metrics per route go here when given (main.ts serves it on METRICS_PORT). */
  metrics?: Registry;
  /** With `tracing`: each request is a span and runs in its trace context (logs, upstream calls). */
  trace?: TraceScope;
  tracing?: Tracing;
  /** GET /readyz answers 503 once this stops serving (SIGTERM); always ready when omitted. */
  health?: HealthState;
  /** Long-polling feed reads in flight; main.ts drains it on SIGTERM. A fresh one when omitted. */
  waitingReads?: WaitingReads;
  /**
   * Counts of attempts the failed-authentication limit answered 429, for the security log; main.ts
   * flushes it each window and on SIGTERM. A fresh one (flushed by nobody) when omitted.
   */
  throttledAuthentications?: ThrottledAuthentications;
}

const API_PREFIX = "/api/v1";

/** The Fastify instance createGateway returns (its logger is the service's pino logger). */
export type Gateway = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;
const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";
/** Readable by browser code if an operator ever fronts the API with CORS. */
const EXPOSED_HEADERS = "Request-Id, RateLimit-Policy, RateLimit, Retry-After";
/** Under an audit outage, one log line per this interval at most (the metric counts every refusal). */
const AUDIT_REFUSAL_LOG_INTERVAL_MS = 10_000;
/** Seconds a client should wait after a 503. */
const UNAVAILABLE_RETRY_AFTER = "1";

function instanceOf(request: FastifyRequest): string {
  const url = request.url;
  const question = url.indexOf("?");
  return question === -1 ? url : url.slice(0, question);
}

function rawQueryOf(request: FastifyRequest): string {
  const question = request.url.indexOf("?");
  return question === -1 ? "" : request.url.slice(question + 1);
}

/** Renders a problem. The body is a string, so no route serialiser touches it. */
function problemPayload(reply: FastifyReply, request: FastifyRequest, problem: ProblemError): string {
  reply.code(problem.status).type(PROBLEM_CONTENT_TYPE);
  const challenge = wwwAuthenticate(problem.code);
  if (challenge) reply.header("www-authenticate", challenge);
  if (problem.code === "unavailable") reply.header("retry-after", UNAVAILABLE_RETRY_AFTER);
  for (const [name, value] of Object.entries(problem.options.headers ?? {})) reply.header(name, value);
  return JSON.stringify(problemBody(problem, instanceOf(request), request.id));
}

/**
 * The gateway as a Fastify instance, routes under /api/v1; never listens (main.ts does, tests inject).
 * Request lifecycle of an API route: onRequest (Request-Id, Cache-Control; then authenticate and rate
 * limit) → preValidation (repeated params, strict integers) → schema validation → handler (the
 * upstream's pre-rendered JSON in its envelope, as bytes) → onSend: audit record awaited (503 instead
 * of the data if it fails) → gzip.
 */
export function createGateway(deps: GatewayDeps): Gateway {
  const { clients, config, logger } = deps;
  const clock = deps.clock ?? { now: () => Date.now() };
  const timeoutMs = config.SUBDATA_UPSTREAM_TIMEOUT_MS;
  // Per client address, as request.ip gives it: the address the audit records (trust-proxy applied).
  const authFailures = createAuthFailureLimiter({
    quota: config.SUBDATA_AUTH_FAILURE_QUOTA,
    windowSeconds: config.SUBDATA_AUTH_FAILURE_WINDOW_SECONDS,
    maxClients: config.SUBDATA_AUTH_FAILURE_MAX_CLIENTS,
    now: clock.now,
  });
  const throttled =
    deps.throttledAuthentications ??
    createThrottledAuthentications({
      apiKeys: clients.apiKeys,
      windowSeconds: config.SUBDATA_AUTH_FAILURE_WINDOW_SECONDS,
      maxAddresses: config.SUBDATA_AUTH_FAILURE_MAX_CLIENTS,
      timeoutMs,
      logger,
      now: clock.now,
    });
  const authenticate = createAuthenticate({ apiKeys: clients.apiKeys, cache: deps.apiKeyCache, failures: authFailures, throttled, logger, timeoutMs });
  const auditObserver = deps.metrics ? auditMetrics(deps.metrics) : undefined;
  const recordAudit = createAuditRecorder({
    audit: clients.audit,
    timeoutMs,
    maxQueued: config.SUBDATA_AUDIT_QUEUE_MAX,
    maxWaitMs: config.SUBDATA_AUDIT_QUEUE_WAIT_MS,
    ...(auditObserver ? { onFlush: auditObserver.flushed } : {}),
  });
  const auditRefusals = createAuditRefusalLog({ logger, intervalMs: AUDIT_REFUSAL_LOG_INTERVAL_MS });
  const waitingReads =
    deps.waitingReads ?? createWaitingReads({ maxTotal: config.SUBDATA_FEED_MAX_WAITING, maxPerKey: config.SUBDATA_FEED_MAX_WAITING_PER_KEY });
  const rateLimiter = createRateLimiter({
    quota: config.SUBDATA_RATE_LIMIT_QUOTA,
    windowSeconds: config.SUBDATA_RATE_LIMIT_WINDOW_SECONDS,
    now: clock.now,
  });

  const app = Fastify({
    loggerInstance: logger,
    // We log one line per response ourselves (onResponse), with no headers: keys never reach a log.
    logController: new LogController({ disableRequestLogging: true }),
    // Never trust a client-supplied id: it goes into the audit log.
    requestIdHeader: false,
    genReqId: () => `req_${randomUUID().replaceAll("-", "")}`,
    trustProxy: config.SUBDATA_TRUST_PROXY as boolean | string[],
    // Long ids reach our handlers (and answer a problem document) instead of the router's bare 414;
    // Node's header size limit still bounds the whole URL.
    routerOptions: { querystringParser: parseQueryString, maxParamLength: 2048 },
    // A request must arrive whole within 30 s (headers within 10 s, below): slow clients cannot hold
    // sockets for Node's default minute.
    requestTimeout: 30_000,
    bodyLimit: 1024,
    return503OnClosing: true,
    ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: true } },
  });

  app.server.headersTimeout = 10_000;

  app.decorateRequest("receivedAtMs", 0);
  app.decorateRequest("principal", null);
  app.decorateRequest("auditResources", null as unknown as FastifyRequest["auditResources"]);

  // The API reads no bodies; accepting any without parsing keeps 405 the answer to e.g. a JSON POST.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => done(null, undefined));

  if (deps.trace && deps.tracing) traceRequests(app, deps.trace, deps.tracing);
  if (deps.metrics) registerHttpMetrics(app, deps.metrics);

  app.addHook("onRequest", async (request, reply) => {
    request.receivedAtMs = clock.now();
    request.auditResources = { resourceIds: [], resultCount: 0 };
    reply.header("request-id", request.id);
    reply.header("cache-control", "private, no-store");
    reply.header("access-control-expose-headers", EXPOSED_HEADERS);
  });

  // Added before @fastify/compress registers its own onSend hook, so this runs on the uncompressed
  // payload and can still replace it.
  app.addHook("onSend", async (request, reply, payload) => {
    const principal = request.principal;
    if (!principal) return payload;
    const status = reply.statusCode;
    const success = status < 300;
    const auditStartedAt = performance.now();
    try {
      await recordAudit({
        merchantId: principal.merchantId,
        apiKeyId: principal.apiKeyId,
        requestId: request.id,
        receivedAtMs: request.receivedAtMs,
        method: request.method,
        route: request.routeOptions.config.auditRoute ?? instanceOf(request),
        query: rawQueryOf(request),
        resourceIds: request.auditResources.resourceIds,
        resultCount: success ? request.auditResources.resultCount : 0,
        status,
        clientIp: request.ip,
        userAgent: request.headers["user-agent"] ?? "",
        latencyMs: clock.now() - request.receivedAtMs,
      });
      auditObserver?.waited((performance.now() - auditStartedAt) / 1000);
      return payload;
    } catch (error) {
      // No audit record, no data.
      const reason = auditRefusalOf(error);
      auditObserver?.refused(reason);
      auditRefusals.refused(reason, error, request.log);
      return problemPayload(reply, request, new ProblemError("unavailable"));
    }
  });

  // After the in-flight requests: the refusals counted since the last line are logged, not lost.
  app.addHook("onClose", async () => auditRefusals.close());

  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.config.auditRoute ?? request.routeOptions.url ?? null,
        status: reply.statusCode,
        apiKeyId: request.principal?.apiKeyId,
        ms: Math.round(reply.elapsedTime),
      },
      "request",
    );
  });

  app.setErrorHandler(async (error, request, reply) => {
    let problem: ProblemError;
    const validation = (error as { validation?: ValidationIssue[] }).validation;
    if (validation) {
      problem = new ProblemError("invalid_parameter", { errors: paramErrorsOf(validation) });
    } else {
      const mapped = toProblem(error, request.routeOptions.config.fieldNames);
      problem = mapped.problem;
      if (mapped.internal) request.log.error({ err: error }, "request failed");
      else if (problem.code === "unavailable") request.log.warn({ err: error }, "dependency unavailable");
    }
    return reply.send(problemPayload(reply, request, problem));
  });

  app.setNotFoundHandler(async (request, reply) => reply.send(problemPayload(reply, request, new ProblemError("not_found"))));

  app.register(fastifyCompress, { global: true, encodings: ["gzip"], threshold: config.SUBDATA_GZIP_THRESHOLD_BYTES });

  // Routes are registered as plugins so that they are added after @fastify/compress, whose onRoute
  // hook attaches compression to each route as it is declared.
  registerProbes(app, deps.health ?? createHealthState());
  const openApiDocument = JSON.stringify(createOpenApiDocument());
  app.register(async (root) => {
    root.route({
      method: ["GET", "HEAD"],
      url: `${API_PREFIX}/openapi.json`,
      schema: { querystring: openApiDocumentQuerySchema },
      handler: async (_request, reply) => reply.type("application/json; charset=utf-8").send(openApiDocument),
    });
  });

  app.register(
    async (api) => {
      api.addHook("onRequest", async (request, reply) => {
        const principal = await authenticate({
          authorization: request.headers.authorization,
          clientIp: request.ip,
          userAgent: request.headers["user-agent"] ?? "",
          requestId: request.id,
        });
        request.principal = principal;
        const decision = rateLimiter.take(principal.apiKeyId);
        reply.header("ratelimit-policy", rateLimiter.policy);
        reply.header("ratelimit", rateLimiter.field(decision));
        if (!decision.allowed) {
          throw new ProblemError("rate_limited", { headers: { "retry-after": String(decision.retryAfterSeconds) } });
        }
      });
      api.addHook("preValidation", async (request) => {
        const schema = request.routeOptions.schema?.querystring as JsonSchema | undefined;
        if (schema) prepareQuery(request.query as Record<string, string | string[]>, schema);
      });
      await api.register(
        createRoutes({
          subscriptions: clients.subscriptions,
          orders: clients.orders,
          events: clients.events,
          waitingEvents: clients.waitingEvents,
          waitingReads,
          timeoutMs,
        }),
      );
    },
    { prefix: API_PREFIX },
  );

  return app;
}
