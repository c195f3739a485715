import { randomBytes } from "node:crypto";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { CALLERS, type Caller, callerHashVariable, callerTokenVariable, RPC_ACCESS } from "../rpc-access.ts";
import { type CallerCredentials, tokenSha256 } from "../service-credential.ts";
import { createServiceTransport, type ServiceTransport } from "../transport.ts";

export interface CallerTokens {
  /** A fresh token per caller, for the clients. */
  tokens: Readonly<Record<Caller, string>>;
  /** Their hashes, for a server: every caller accepted (the access table still decides per RPC). */
  credentials: CallerCredentials;
  /** The environment a spawned process takes: SUBDATA_<CALLER>_TOKEN and …_SHA256 of every caller. */
  environment: Readonly<Record<string, string>>;
}

/** One random token per caller, as `npm start` generates them. */
export function createCallerTokens(): CallerTokens {
  const tokens = Object.fromEntries(CALLERS.map((caller) => [caller, randomBytes(32).toString("base64url")])) as Record<Caller, string>;
  const credentials = Object.fromEntries(CALLERS.map((caller) => [caller, [tokenSha256(tokens[caller])]]));
  const environment = Object.fromEntries(
    CALLERS.flatMap((caller) => [
      [callerTokenVariable(caller), tokens[caller]],
      [callerHashVariable(caller), tokenSha256(tokens[caller]).toString("hex")],
    ]),
  );
  return { tokens, credentials, environment };
}

/**
 * A transport that calls each RPC as the first caller the access table allows it, so one test client
 * can drive a whole service (AuthenticateApiKey as the gateway, CreateApiKey as the console, …). Tests
 * of the table itself call as one caller, with createServiceTransport and that caller's token.
 */
export function createAllowedCallerTransport(options: {
  baseUrl: string;
  tokens: Readonly<Record<Caller, string>>;
  interceptors?: Interceptor[];
}): ServiceTransport {
  const byCaller = new Map<Caller, ServiceTransport>();
  const transportFor = (typeName: string, method: string): Transport => {
    const caller = RPC_ACCESS[`${typeName}/${method}`]?.[0] ?? "gateway";
    let transport = byCaller.get(caller);
    if (transport === undefined) {
      transport = createServiceTransport({ baseUrl: options.baseUrl, serviceToken: options.tokens[caller], interceptors: options.interceptors });
      byCaller.set(caller, transport);
    }
    return transport.transport;
  };
  return {
    transport: {
      unary: (method, ...rest) => transportFor(method.parent.typeName, method.name).unary(method, ...rest),
      stream: (method, ...rest) => transportFor(method.parent.typeName, method.name).stream(method, ...rest),
    },
    close() {
      for (const transport of byCaller.values()) transport.close();
    },
  };
}
