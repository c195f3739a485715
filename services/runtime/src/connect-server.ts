import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health } from "@subdata/proto/grpc/health/v1/health_pb";
import type { Logger } from "./logger.ts";
import { createHealthService, type HealthState } from "./health.ts";
import { widenConnectionWindow } from "./http2-flow-control.ts";
import { rpcServerMetrics } from "./metrics.ts";
import { type CallerCredentials, requireCallerCredential } from "./service-credential.ts";
import { createUnaryFastPath } from "./unary-handler.ts";
import type { Tracing } from "./tracing.ts";
import { acceptTraceContext, type TraceScope } from "./trace-context.ts";
import type { Registry } from "prom-client";

export interface ConnectServerOptions {
  /** Registers the service implementations (the service's routes.ts). */
  routes: (router: ConnectRouter) => void;
  /** Fully-qualified names of the services registered, for the health service. */
  serviceNames: readonly string[];
  /**
   * SUBDATA_<CALLER>_TOKEN_SHA256 of each caller the server's RPCs allow: every RPC but grpc.health.v1
   * must present one of these callers' tokens, and rpc-access.ts must allow that caller the RPC.
   */
  callers: CallerCredentials;
  logger: Logger;
  health: HealthState;
  /** Optional: RED metrics into `metrics`; trace context and request id of callers into `trace` (and so the logs). */
  observability?: ConnectObservability;
}

export interface ConnectObservability {
  metrics?: Registry;
  /** With `tracing`: every RPC runs in its trace context (logs, onward calls) as a SERVER span. */
  trace?: TraceScope;
  tracing?: Tracing;
}

/** HTTP/2 settings for internal hops: the default 64 KB window throttles page-sized responses. */
export const http2Settings: http2.Settings = { initialWindowSize: 4 * 1024 * 1024 };

const PG_QUERY_CANCELED = "57014";
/** Deadlock detected, serialization failure: the transaction lost a race and may simply be repeated. */
const PG_CONFLICTS = new Set(["40P01", "40001"]);

/**
 * Turns anything that is not a deliberate ConnectError into one without leaking internals: statement
 * timeouts become DEADLINE_EXCEEDED, lost database connections UNAVAILABLE, a deadlock or
 * serialization failure ABORTED (gRPC's "retry the whole transaction"; e.g. DeleteEndpoint racing the
 * delivery recorder), the rest INTERNAL. The original is logged with its stack.
 */
export function normaliseErrors(logger: Logger): Interceptor {
  return (next) => async (request) => {
    try {
      return await next(request);
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      const pgCode = (error as { code?: unknown }).code;
      if (pgCode === PG_QUERY_CANCELED) {
        throw new ConnectError("the query took too long", Code.DeadlineExceeded);
      }
      if (typeof pgCode === "string" && PG_CONFLICTS.has(pgCode)) {
        logger.warn({ err: error, method: request.method.name }, "transaction conflicted; the caller may retry");
        throw new ConnectError("a concurrent change conflicted with this request; retry it", Code.Aborted);
      }
      if (isConnectionError(error)) {
        logger.warn({ err: error, method: request.method.name }, "database unavailable");
        throw new ConnectError("a dependency is unavailable", Code.Unavailable);
      }
      logger.error({ err: error, method: request.method.name }, "unexpected error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}

function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") {
    return error instanceof Error && /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect/i.test(error.message);
  }
  return code.startsWith("08") || code === "57P01" || code === "57P03" || code === "ECONNREFUSED" || code === "ECONNRESET";
}

function logCalls(logger: Logger): Interceptor {
  return (next) => async (request) => {
    const started = performance.now();
    try {
      const response = await next(request);
      logger.debug({ rpc: `${request.service.typeName}/${request.method.name}`, ms: performance.now() - started }, "rpc ok");
      return response;
    } catch (error) {
      const code = error instanceof ConnectError ? Code[error.code] : "Unknown";
      logger.info({ rpc: `${request.service.typeName}/${request.method.name}`, code, ms: performance.now() - started }, "rpc failed");
      throw error;
    }
  };
}

/** An internal server: not listening until listen(); close() drains it. */
export interface ConnectServer {
  readonly server: http2.Http2Server;
  /** Listens and resolves with the bound address (port 0 picks a free port, for tests). */
  listen(host: string, port: number): Promise<AddressInfo>;
  /**
   * Stops accepting, sends GOAWAY to every open session so clients move on, and resolves once
   * in-flight streams have finished.
   */
  close(): Promise<void>;
}

/**
 * An h2c server speaking Connect, gRPC and gRPC-Web for the given routes plus grpc.health.v1.
 * Responses are never compressed: internal hops are cheap to send and compression cost ~30 % CPU.
 */
export function createConnectServer(options: ConnectServerOptions): ConnectServer {
  const interceptors: Interceptor[] = [
    // Outermost first: the trace wraps everything (so every log line has it), metrics see final codes.
    ...(options.observability?.trace && options.observability.tracing ? [acceptTraceContext(options.observability.trace, options.observability.tracing)] : []),
    ...(options.observability?.metrics ? [rpcServerMetrics(options.observability.metrics)] : []),
    logCalls(options.logger),
    requireCallerCredential({ credentials: options.callers, logger: options.logger }),
    normaliseErrors(options.logger),
  ];
  const readMaxBytes = 1024 * 1024;
  // Binary Connect unary calls (every internal client's) take the lean path, the rest connect-node's.
  const fastPath = createUnaryFastPath({ interceptors, readMaxBytes });
  const adapter = connectNodeAdapter({
    routes: fastPath.recordRoutes((router) => {
      router.service(Health, createHealthService(options.health, options.serviceNames));
      options.routes(router);
    }),
    interceptors,
    acceptCompression: [],
    readMaxBytes,
  });
  const handler = (request: http2.Http2ServerRequest, response: http2.Http2ServerResponse) => {
    if (!fastPath.handle(request, response)) adapter(request, response);
  };
  const server = http2.createServer({ settings: http2Settings }, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    // Requests are small, but the connection window is shared by every stream of the session.
    widenConnectionWindow(session);
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  return {
    server,
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        for (const session of sessions) session.close();
      });
    },
  };
}
