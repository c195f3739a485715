import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { http2Settings } from "./connect-server.ts";
import { sendServiceCredential } from "./service-credential.ts";

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
 * A Connect transport to an internal service: one reused HTTP/2 session with a large flow-control
 * window, binary protobuf, no compression, the service credential on every call.
 */
export function createServiceTransport(options: ServiceTransportOptions): ServiceTransport {
  const sessionManager = new Http2SessionManager(options.baseUrl, { pingIntervalMs: 15_000, idleConnectionTimeoutMs: 60_000 }, {
    settings: http2Settings,
  });
  const transport = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    sessionManager,
    acceptCompression: [],
    interceptors: [...(options.interceptors ?? []), sendServiceCredential(options.serviceToken)],
  });
  return { transport, close: () => sessionManager.abort() };
}
