import type { Interceptor, Transport } from "@connectrpc/connect";
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
 * A Connect transport to an internal service: unary calls (buf's UNARY_RPC rule allows no other kind)
 * on one reused HTTP/2 session with wide flow-control windows, through the lean client
 * (unary-transport.ts): binary protobuf, no compression, the service credential on every call.
 */
export function createServiceTransport(options: ServiceTransportOptions): ServiceTransport {
  const interceptors = [...(options.interceptors ?? []), sendServiceCredential(options.serviceToken)];
  return createUnaryTransport({ baseUrl: options.baseUrl, interceptors });
}
