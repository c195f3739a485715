import { readFileSync } from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { EventService } from "@subdata/proto/subdata/events/v1/event_service_pb";
import { OrderService } from "@subdata/proto/subdata/order/v1/order_service_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { type Caller, CALLERS, createServiceTransport, ErrorReason, errorDetailOf, RPC_ACCESS, renderRpcAccessTable } from "@subdata/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AuthHarness, startAuthService } from "../auth/auth-harness.ts";
import { type RunningConsoleServer, startConsoleServer } from "../console/console-server.ts";
import { type RunningQueryServer, startQueryServer } from "../support/query-server.ts";
import { type RunningWebhookServer, startWebhookServer } from "../webhook-api/webhook-server.ts";

// Every RPC of every service, called through the real servers as each caller with that caller's own
// token: outside its row in the access table the answer is PERMISSION_DENIED before any handler runs;
// inside it the call reaches the handler (which may still refuse the empty request as invalid).
let query: RunningQueryServer;
let auth: AuthHarness;
let webhook: RunningWebhookServer;
let consoleServer: RunningConsoleServer;

beforeAll(async () => {
  [query, auth, webhook, consoleServer] = await Promise.all([startQueryServer(), startAuthService(), startWebhookServer(), startConsoleServer()]);
});

afterAll(async () => {
  await Promise.all([query?.stop(), auth?.close(), webhook?.stop(), consoleServer?.close()]);
});

const servers = (): Array<{ services: DescService[]; baseUrl: string; tokens: Readonly<Record<Caller, string>> }> => [
  { services: [SubscriptionService, OrderService, EventService], baseUrl: query.baseUrl, tokens: query.tokens },
  { services: [ApiKeyService, AuditService], baseUrl: auth.baseUrl, tokens: auth.tokens },
  { services: [WebhookEndpointService, WebhookDeliveryService], baseUrl: webhook.baseUrl, tokens: webhook.tokens },
  { services: [PortalSessionService], baseUrl: consoleServer.baseUrl, tokens: consoleServer.tokens },
];

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

/** "denied" and "unauthenticated" are the credential check's answers; anything else came from the handler. */
async function outcomeOf(call: Promise<unknown>): Promise<"denied" | "unauthenticated" | "reached"> {
  try {
    await call;
    return "reached";
  } catch (caught) {
    const error = ConnectError.from(caught);
    if (error.code === Code.PermissionDenied) return "denied";
    // AuthenticateApiKey answers an unknown API key UNAUTHENTICATED too, without this reason.
    if (error.code === Code.Unauthenticated && errorDetailOf(error)?.reason === ErrorReason.SERVICE_CREDENTIAL_INVALID) return "unauthenticated";
    return "reached";
  }
}

describe("the access table, enforced by every server", () => {
  it.each(CALLERS)("refuses the %s every RPC outside its row, and lets it reach every RPC in it", async (caller) => {
    const outcomes: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const server of servers()) {
      const connection = createServiceTransport({ baseUrl: server.baseUrl, serviceToken: server.tokens[caller] });
      try {
        for (const service of server.services) {
          const client = createClient(service, connection.transport) as unknown as Record<string, (request: object) => Promise<unknown>>;
          for (const method of service.methods) {
            const rpc = `${service.typeName}/${method.name}`;
            const allowed = RPC_ACCESS[rpc]?.includes(caller) ?? false;
            // Inside the row any answer but the credential check's refusals means the handler ran.
            outcomes[rpc] = await outcomeOf(client[method.localName]!({}));
            expected[rpc] = allowed ? "reached" : "denied";
          }
        }
      } finally {
        connection.close();
      }
    }
    expect(Object.keys(outcomes)).toHaveLength(Object.keys(RPC_ACCESS).length);
    expect(outcomes).toEqual(expected);
  });

  it("logs each refusal with the caller and the RPC, never the token", async () => {
    const before = auth.logs.length;
    const connection = createServiceTransport({ baseUrl: auth.baseUrl, serviceToken: auth.tokens.gateway });
    try {
      const error = await codeOf(createClient(ApiKeyService, connection.transport).createApiKey({ merchantId: "mer_forged", name: "stolen" }));
      expect(error).toBe(Code.PermissionDenied);
    } finally {
      connection.close();
    }
    const refusals = auth.logs
      .slice(before)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.level === "warn");
    expect(refusals).toEqual([expect.objectContaining({ caller: "gateway", rpc: "subdata.auth.v1.ApiKeyService/CreateApiKey" })]);
    for (const token of Object.values(auth.tokens)) expect(auth.logs.join("")).not.toContain(token);
  });

  it("answers UNAUTHENTICATED, not PERMISSION_DENIED, to a token of no caller", async () => {
    const connection = createServiceTransport({ baseUrl: auth.baseUrl, serviceToken: query.tokens.gateway });
    try {
      expect(await outcomeOf(createClient(ApiKeyService, connection.transport).authenticateApiKey({ key: "sk_x" }))).toBe("unauthenticated");
    } finally {
      connection.close();
    }
  });
});

describe("docs/security.md", () => {
  it("carries the access table exactly as the servers enforce it", () => {
    const doc = readFileSync(new URL("../../docs/security.md", import.meta.url), "utf8");
    const rendered = /<!-- rpc-access:begin -->\n([\s\S]*?)\n<!-- rpc-access:end -->/.exec(doc)?.[1];
    expect(rendered).toBe(renderRpcAccessTable());
  });
});
