import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createAuthDependencies, createAuthServer, createNatsRevocationPublisher, type AuthDependencies } from "@subdata/auth";
import { createPool, createServiceTransport, type Queryable } from "@subdata/runtime";
import { inject } from "vitest";
import { recordingQueryable } from "../support/recording-queryable.ts";
import { type CallerTokens, createAllowedCallerTransport, createCallerTokens, createCapturedLogger } from "@subdata/runtime/test-support";

export interface AuthHarnessOptions {
  /** Wraps the auth role's pool, e.g. to fail statements. */
  wrapDb?: (db: Queryable) => Queryable;
  natsUrl?: string;
}

/**
 * The auth service in-process, as main.ts wires it, on port 0 with the subdata_auth role, real NATS,
 * a log captured in memory and every SQL statement the service sends recorded in order.
 */
export interface AuthHarness {
  apiKeys: Client<typeof ApiKeyService>;
  audit: Client<typeof AuditService>;
  /** Clients that present no service credential at all, or a wrong one. */
  anonymous: { apiKeys: Client<typeof ApiKeyService>; audit: Client<typeof AuditService> };
  wrongCredential: { apiKeys: Client<typeof ApiKeyService> };
  baseUrl: string;
  /** Each caller's token (the server accepts them all; the access table decides per RPC). */
  tokens: CallerTokens["tokens"];
  deps: AuthDependencies;
  /** SQL text of every statement the service sent, in order. */
  statements: string[];
  /** Every log line the service wrote. */
  logs: string[];
  auditFlushes: Array<{ size: number; ok: boolean }>;
  close(): Promise<void>;
}

export async function startAuthService(options: AuthHarnessOptions = {}): Promise<AuthHarness> {
  const callers = createCallerTokens();
  const { logger, lines: logs } = createCapturedLogger({ name: "auth-test", level: "trace" });
  const pool = createPool({ connectionString: inject("roleDatabaseUrls").auth, applicationName: "auth-test", max: 4 });
  const statements: string[] = [];
  const recording = recordingQueryable(pool, statements);
  const db = options.wrapDb ? options.wrapDb(recording) : recording;
  const revocations = createNatsRevocationPublisher({ servers: options.natsUrl ?? inject("natsUrl"), logger, retryDelayMs: 200 });
  const auditFlushes: Array<{ size: number; ok: boolean }> = [];
  const deps = createAuthDependencies({
    db,
    logger,
    pageTokenSecret: randomBytes(32).toString("hex"),
    revocations,
    onAuditFlush: (outcome) => auditFlushes.push(outcome),
  });
  const server = createAuthServer({ ...deps, callers: callers.credentials, logger });
  const address = await server.listen("127.0.0.1", 0);
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const transport = createAllowedCallerTransport({ baseUrl, tokens: callers.tokens });
  const anonymousTransport = createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true });
  const wrongTransport = createServiceTransport({ baseUrl, serviceToken: randomBytes(32).toString("hex") });
  return {
    apiKeys: createClient(ApiKeyService, transport.transport),
    audit: createClient(AuditService, transport.transport),
    anonymous: {
      apiKeys: createClient(ApiKeyService, anonymousTransport),
      audit: createClient(AuditService, anonymousTransport),
    },
    wrongCredential: { apiKeys: createClient(ApiKeyService, wrongTransport.transport) },
    baseUrl,
    tokens: callers.tokens,
    deps,
    statements,
    logs,
    auditFlushes,
    async close() {
      transport.close();
      wrongTransport.close();
      await server.close();
      await deps.close();
      await revocations.close();
      await pool.end();
    },
  };
}
