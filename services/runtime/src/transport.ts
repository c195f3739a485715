import type http2 from "node:http2";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { http2Settings } from "./connect-server.ts";
import { widenConnectionWindow } from "./http2-flow-control.ts";
import { sendServiceCredential } from "./service-credential.ts";
import { createUnaryTransport } from "./unary-transport.ts";

export interface ServiceTransportOptions {
  /** e.g. "http://127.0.0.1:8091" (h2c). */
  baseUrl: string;
  serviceToken: string;
  /** Extra client interceptors, e.g. sendTraceContext(scope), run before the credential is attached. */
  interceptors?: Interceptor[];
}

export interface ServiceTransport {
  transport: Transport;
  /** Closes the HTTP/2 session (GOAWAY); call on shutdown. */
  close(): void;
}

/**
 * connect-node's session manager, widening the connection-level window of every session it opens
 * (http2-flow-control.ts). The manager creates sessions internally; the first stream of each is the
 * earliest point where the session is reachable, and its WINDOW_UPDATE leaves with that request.
 */
class WideWindowSessionManager extends Http2SessionManager {
  private readonly widened = new WeakSet<http2.Http2Session>();

  override async request(...args: Parameters<Http2SessionManager["request"]>): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(...args);
    const session = stream.session;
    if (session && !this.widened.has(session)) {
      this.widened.add(session);
      widenConnectionWindow(session);
    }
    return stream;
  }
}

/**
 * A Connect transport to an internal service: unary calls on one reused HTTP/2 session through the
 * lean client (unary-transport.ts), streaming calls through connect-node's transport; both with large
 * flow-control windows (per stream and per connection), binary protobuf, no compression, and the
 * service credential on every call.
 */
export function createServiceTransport(options: ServiceTransportOptions): ServiceTransport {
  const interceptors = [...(options.interceptors ?? []), sendServiceCredential(options.serviceToken)];
  const sessionManager = new WideWindowSessionManager(options.baseUrl, { pingIntervalMs: 15_000, idleConnectionTimeoutMs: 60_000 }, {
    settings: http2Settings,
  });
  const streaming = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    sessionManager,
    acceptCompression: [],
    interceptors,
  });
  const unary = createUnaryTransport({ baseUrl: options.baseUrl, interceptors, streaming });
  return {
    transport: unary.transport,
    close: () => {
      unary.close();
      sessionManager.abort();
    },
  };
}
