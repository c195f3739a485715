import type http2 from "node:http2";
import { create, fromBinary, isMessage, toBinary, type DescMessage, type DescMethodUnary, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createHandlerContext,
  type ConnectRouter,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";

/**
 * The server half of unary-transport.ts: Connect unary calls with binary protobuf (what every
 * internal client sends) are served straight from the HTTP/2 request, through the same interceptors
 * and the same implementations that connect-node's adapter serves; anything else (JSON, gRPC, gRPC-Web,
 * GET, compression, streaming, unknown paths) goes to that adapter unchanged.
 *
 * Why: connect-node spends per call on universal request/response adapters, async iterables and an
 * AbortSignal aborted at the end of every call, whose DOMException alone costs about 3 % of the
 * query service's CPU. The query service answers one such call per page served (docs/benchmarks.md).
 */

type AnyMethod = DescMethodUnary<DescMessage, DescMessage>;
type UnaryImplementation = (request: unknown, context: ReturnType<typeof createHandlerContext>) => unknown;
type AnyUnaryRequest = UnaryRequest<DescMessage, DescMessage>;
type AnyUnaryResponse = UnaryResponse<DescMessage, DescMessage>;

interface Route {
  service: DescService;
  method: AnyMethod;
  call: (request: AnyUnaryRequest, context: ReturnType<typeof createHandlerContext>) => Promise<AnyUnaryResponse>;
}

export interface UnaryFastPath {
  /** Wraps the services' routes: registers with connect-node's router and remembers unary methods. */
  recordRoutes(routes: (router: ConnectRouter) => void): (router: ConnectRouter) => void;
  /** Serves the request if it is a binary Connect unary call to a known method; false otherwise. */
  handle(request: http2.Http2ServerRequest, response: http2.Http2ServerResponse): boolean;
}

export interface UnaryFastPathOptions {
  interceptors: Interceptor[];
  /** Request bodies larger than this are refused (RESOURCE_EXHAUSTED), as connect-node's readMaxBytes. */
  readMaxBytes: number;
}

// Aborting the context with a reason of our own is what releases its deadline timer without
// Node building a DOMException for the default reason.
const CALL_FINISHED = Object.freeze({ name: "CallFinished", message: "the call finished" });

export function createUnaryFastPath(options: UnaryFastPathOptions): UnaryFastPath {
  const routes = new Map<string, Route>();

  function remember(service: DescService, implementation: Record<string, unknown>): void {
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      const impl = implementation[method.localName] as UnaryImplementation | undefined;
      if (typeof impl !== "function") continue;
      const unary = method as AnyMethod;
      const innermost = async (request: AnyUnaryRequest, context: ReturnType<typeof createHandlerContext>): Promise<AnyUnaryResponse> => {
        const output = (await impl.call(implementation, request.message, context)) as object;
        return {
          stream: false,
          service,
          method: unary,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message: isMessage(output, unary.output) ? output : create(unary.output, output as never),
        };
      };
      routes.set(`/${service.typeName}/${method.name}`, {
        service,
        method: unary,
        call: (request, context) => {
          const chain = options.interceptors.reduceRight<(request: AnyUnaryRequest) => Promise<AnyUnaryResponse>>(
            (next, interceptor) => interceptor(next as never) as never,
            (request) => innermost(request, context),
          );
          return chain(request);
        },
      });
    }
  }

  return {
    recordRoutes(register) {
      return (router) => {
        const recording: ConnectRouter = {
          handlers: router.handlers,
          service(service, implementation, handlerOptions) {
            remember(service, implementation as Record<string, unknown>);
            return router.service(service, implementation, handlerOptions);
          },
          rpc(method, implementation, handlerOptions) {
            if (method.methodKind === "unary") remember(method.parent, { [method.localName]: implementation });
            return router.rpc(method, implementation, handlerOptions);
          },
        } as ConnectRouter;
        register(recording);
      };
    },

    handle(request, response) {
      if (request.method !== "POST") return false;
      const route = routes.get(request.url);
      if (!route) return false;
      const headers = request.headers;
      if (headers["content-type"] !== "application/proto") return false;
      const encoding = headers["content-encoding"];
      if (encoding !== undefined && encoding !== "identity") return false;
      const version = headers["connect-protocol-version"];
      if (version !== undefined && version !== "1") return false;
      serve(route, request, response, options.readMaxBytes);
      return true;
    },
  };
}

function serve(route: Route, request: http2.Http2ServerRequest, response: http2.Http2ServerResponse, readMaxBytes: number): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let refused = false;
  request.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (received > readMaxBytes) {
      if (!refused) sendError(response, new ConnectError(`message larger than ${readMaxBytes} bytes`, Code.ResourceExhausted));
      refused = true;
      return;
    }
    chunks.push(chunk);
  });
  request.on("end", () => {
    if (refused) return;
    void answer(route, request, response, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received));
  });
}

async function answer(route: Route, request: http2.Http2ServerRequest, response: http2.Http2ServerResponse, body: Buffer): Promise<void> {
  const requestHeader = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    requestHeader.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const timeout = parseTimeout(requestHeader.get("connect-timeout-ms"), Number.MAX_SAFE_INTEGER);
  // The call's signal also aborts when the client goes away (RST_STREAM) before the answer.
  const clientGone = new AbortController();
  const onClose = () => {
    if (!response.writableEnded) clientGone.abort(new ConnectError("the client cancelled the call", Code.Canceled));
  };
  request.once("close", onClose);
  const context = createHandlerContext({
    service: route.service,
    method: route.method,
    protocolName: "connect",
    requestMethod: "POST",
    url: request.url,
    timeoutMs: timeout.timeoutMs,
    requestSignal: clientGone.signal,
    requestHeader,
    contextValues: createContextValues(),
  });
  try {
    if (timeout.error) throw timeout.error;
    let message: AnyUnaryRequest["message"];
    try {
      message = fromBinary(route.method.input, body);
    } catch (error) {
      throw new ConnectError(`cannot decode the request: ${(error as Error).message}`, Code.InvalidArgument);
    }
    const result = await route.call(
      {
        stream: false,
        service: route.service,
        method: route.method,
        requestMethod: "POST",
        url: request.url,
        signal: context.signal,
        header: context.requestHeader,
        contextValues: context.values,
        message,
      },
      context,
    );
    const bytes = toBinary(route.method.output, result.message);
    const outgoing: http2.OutgoingHttpHeaders = { "content-type": "application/proto", "content-length": bytes.byteLength };
    for (const [name, value] of result.header) outgoing[name] = value;
    for (const [name, value] of result.trailer) outgoing[`trailer-${name}`] = value;
    if (!response.stream.destroyed) {
      response.writeHead(200, outgoing);
      response.end(bytes);
    }
  } catch (error) {
    sendError(response, ConnectError.from(error, Code.Internal), context.responseHeader);
  } finally {
    request.off("close", onClose);
    context.abort(CALL_FINISHED);
  }
}

function sendError(response: http2.Http2ServerResponse, error: ConnectError, header?: Headers): void {
  if (response.stream.destroyed || response.headersSent) return;
  const outgoing: http2.OutgoingHttpHeaders = { "content-type": "application/json" };
  for (const [name, value] of header ?? []) outgoing[name] = value;
  for (const [name, value] of error.metadata) outgoing[name] = value;
  const bytes = errorToJsonBytes(error, {});
  outgoing["content-length"] = bytes.byteLength;
  response.writeHead(codeToHttpStatus(error.code), outgoing);
  response.end(bytes);
}
