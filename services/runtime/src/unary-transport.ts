import http2 from "node:http2";
import { create, fromBinary, isMessage, toBinary, type DescMessage, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type Interceptor, type Transport, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { codeFromHttpStatus, errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";
import { http2Settings } from "./connect-server.ts";
import { widenConnectionWindow } from "./http2-flow-control.ts";

/**
 * A Connect-protocol client for unary calls on one raw HTTP/2 session: binary protobuf, no
 * compression, interceptors as connect-node runs them. It speaks exactly what connect-node's server
 * expects (POST /<service>/<method>, application/proto, connect-protocol-version, connect-timeout-ms)
 * and reads its errors with connect's own JSON decoder. Unary only: buf's UNARY_RPC rule keeps
 * streaming methods out of our protos.
 *
 * Why not connect-node's transport: a connect-node unary call costs about 0.6 ms of client CPU against
 * about 0.15 ms for the same exchange on raw HTTP/2 (its universal request/response adapters, async
 * iterables and two linked abort signals per call). The gateway makes such a call for
 * every page it serves, so that difference is most of the edge's cost (docs/benchmarks.md).
 */
export interface UnaryTransportOptions {
  /** e.g. "http://127.0.0.1:8091" (h2c). */
  baseUrl: string;
  /** Run outermost first, as connect-node runs them. */
  interceptors?: Interceptor[];
  /** A response body larger than this fails the call (RESOURCE_EXHAUSTED). Default 64 MiB. */
  maxResponseBytes?: number;
}

export interface UnaryTransport {
  transport: Transport;
  /** Closes the session; calls in flight fail with UNAVAILABLE. */
  close(): void;
}

type AnyUnaryRequest = UnaryRequest<DescMessage, DescMessage>;
type AnyUnaryResponse = UnaryResponse<DescMessage, DescMessage>;

// A signal that never aborts, for calls made without a deadline or a caller signal.
const NEVER = new AbortController().signal;

export function createUnaryTransport(options: UnaryTransportOptions): UnaryTransport {
  const base = new URL(options.baseUrl);
  const pathPrefix = base.pathname.replace(/\/$/, "");
  const maxResponseBytes = options.maxResponseBytes ?? 64 * 1024 * 1024;
  let current: http2.ClientHttp2Session | undefined;
  let closed = false;
  // Responses seen on the current session: a deadline that passes with none at all means the
  // connection is dead (a silent peer), and the next call must not wait on it again.
  let responsesSeen = 0;

  function session(): http2.ClientHttp2Session {
    if (current && !current.closed && !current.destroyed) return current;
    const opened = http2.connect(base.origin, { settings: http2Settings });
    const forget = () => {
      if (current === opened) current = undefined;
    };
    opened.once("connect", () => widenConnectionWindow(opened));
    // Errors reach the streams in flight; the session itself is replaced on the next call.
    opened.on("error", forget);
    opened.once("goaway", forget);
    opened.once("close", forget);
    // An idle session must not keep the process alive; calls in flight do (hold/release below).
    opened.unref();
    current = opened;
    responsesSeen = 0;
    return opened;
  }

  // Calls in flight per session: while there are any, the session holds the event loop open (a CLI
  // awaiting its only call, with no deadline timer, would otherwise exit mid-call).
  const inFlight = new WeakMap<http2.ClientHttp2Session, number>();
  const hold = (held: http2.ClientHttp2Session) => {
    const count = inFlight.get(held) ?? 0;
    if (count === 0) held.ref();
    inFlight.set(held, count + 1);
  };
  const release = (held: http2.ClientHttp2Session) => {
    const count = (inFlight.get(held) ?? 1) - 1;
    inFlight.set(held, count);
    if (count === 0 && !held.destroyed) held.unref();
  };

  function send(request: AnyUnaryRequest): Promise<AnyUnaryResponse> {
    if (closed) return Promise.reject(new ConnectError("transport closed", Code.Unavailable));
    const body = toBinary(request.method.input, request.message);
    const headers: http2.OutgoingHttpHeaders = {
      ":method": "POST",
      ":path": `${pathPrefix}/${request.service.typeName}/${request.method.name}`,
      "content-type": "application/proto",
      "connect-protocol-version": "1",
      "content-length": body.byteLength,
    };
    request.header.forEach((value, name) => {
      headers[name] = value;
    });
    return new Promise<AnyUnaryResponse>((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      const activeSession = session();
      try {
        stream = activeSession.request(headers);
      } catch (error) {
        activeSession.destroy();
        reject(new ConnectError(`upstream session unusable: ${(error as Error).message}`, Code.Unavailable));
        return;
      }
      hold(activeSession);
      const seenAtStart = responsesSeen;
      let status = 0;
      let responseHeaders: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let received = 0;
      let settled = false;
      // The shared never-aborting signal would collect a listener per call in flight.
      let watchSignal = request.signal !== NEVER;
      const finish = (error: ConnectError | undefined, response?: AnyUnaryResponse) => {
        if (settled) return;
        settled = true;
        release(activeSession);
        if (watchSignal) request.signal.removeEventListener("abort", onAbort);
        if (error) {
          if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
          reject(error);
        } else {
          resolve(response as AnyUnaryResponse);
        }
      };
      const onAbort = () => {
        const reason: unknown = request.signal.reason;
        const error = ConnectError.from(reason, Code.Canceled);
        if (error.code === Code.DeadlineExceeded && responsesSeen === seenAtStart && current === activeSession) {
          activeSession.destroy();
        }
        finish(error);
      };
      if (request.signal.aborted) {
        watchSignal = false;
        return onAbort();
      }
      if (watchSignal) request.signal.addEventListener("abort", onAbort);
      stream.on("response", (incoming) => {
        responsesSeen++;
        status = Number(incoming[":status"]);
        responseHeaders = incoming;
      });
      stream.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxResponseBytes) {
          finish(new ConnectError(`response larger than ${maxResponseBytes} bytes`, Code.ResourceExhausted));
          return;
        }
        chunks.push(chunk);
      });
      let ended = false;
      stream.on("end", () => (ended = true));
      stream.on("error", (error) => finish(new ConnectError(`upstream stream failed: ${error.message}`, Code.Unavailable)));
      stream.on("close", () => {
        if (settled) return;
        // A reset (any code but NO_ERROR) means the body may be cut short: never decode it. Node emits
        // "end" even for a stream whose connection dropped mid-body, so the RST code is what tells.
        if (status === 0 || !ended || stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) {
          finish(new ConnectError(`upstream closed the stream (HTTP/2 code ${stream.rstCode})`, Code.Unavailable));
          return;
        }
        const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
        try {
          finish(undefined, readResponse(request, status, responseHeaders, bytes));
        } catch (error) {
          finish(ConnectError.from(error, Code.Internal));
        }
      });
      stream.end(body);
    });
  }

  const call = (options.interceptors ?? []).reduceRight<(request: AnyUnaryRequest) => Promise<AnyUnaryResponse>>(
    (next, interceptor) => interceptor(next as never) as never,
    send,
  );

  const transport: Transport = {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0],
      input: MessageInitShape<I>,
      contextValues?: ReturnType<typeof createContextValues>,
    ): Promise<UnaryResponse<I, O>> {
      const requestHeader = new Headers(header);
      let deadline: ReturnType<typeof setTimeout> | undefined;
      let callSignal = signal ?? NEVER;
      if (timeoutMs !== undefined && timeoutMs > 0) {
        // One controller per call, and the deadline goes to the server too (it stops working then).
        const controller = new AbortController();
        deadline = setTimeout(() => controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded)), timeoutMs);
        if (signal) {
          if (signal.aborted) controller.abort(signal.reason);
          else signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
        }
        callSignal = controller.signal;
        requestHeader.set("connect-timeout-ms", String(Math.ceil(timeoutMs)));
      }
      const request: UnaryRequest<I, O> = {
        stream: false,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: `${base.origin}${pathPrefix}/${method.parent.typeName}/${method.name}`,
        signal: callSignal,
        header: requestHeader,
        contextValues: contextValues ?? createContextValues(),
        message: (isMessage(input, method.input) ? input : create(method.input, input)) as UnaryRequest<I, O>["message"],
      };
      try {
        return (await call(request as unknown as AnyUnaryRequest)) as unknown as UnaryResponse<I, O>;
      } finally {
        if (deadline) clearTimeout(deadline);
      }
    },
    stream(method) {
      return Promise.reject(new ConnectError(`${method.name}: streaming calls are not supported by this transport`, Code.Unimplemented));
    },
  };

  return {
    transport,
    close() {
      closed = true;
      current?.close();
      current = undefined;
    },
  };
}

/** A Connect unary response: 200 with a protobuf body, or an error as Connect's JSON. */
function readResponse(request: AnyUnaryRequest, status: number, incoming: http2.IncomingHttpHeaders, body: Buffer): AnyUnaryResponse {
  const header = new Headers();
  const trailer = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (name.startsWith(":") || value === undefined) continue;
    const text = Array.isArray(value) ? value.join(", ") : String(value);
    if (name.startsWith("trailer-")) trailer.set(name.slice("trailer-".length), text);
    else header.set(name, text);
  }
  const contentType = String(incoming["content-type"] ?? "");
  if (status !== 200) {
    const fallback = new ConnectError(`HTTP ${status}`, codeFromHttpStatus(status), header);
    if (!contentType.startsWith("application/json") || body.length === 0) throw fallback;
    const metadata = new Headers(header);
    for (const [name, value] of trailer) metadata.set(name, value);
    throw errorFromJsonBytes(body, metadata, fallback);
  }
  // No accept-encoding is sent, so a compressed body would be a server ignoring the negotiation.
  const encoding = incoming["content-encoding"];
  if (encoding !== undefined && encoding !== "identity") throw new ConnectError(`unexpected response encoding "${String(encoding)}"`, Code.Internal);
  if (!contentType.startsWith("application/proto")) {
    throw new ConnectError(`unexpected response content type "${contentType}"`, Code.Internal);
  }
  return {
    stream: false,
    service: request.service,
    method: request.method,
    header,
    message: fromBinary(request.method.output, body),
    trailer,
  };
}
