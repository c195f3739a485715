import { randomBytes } from "node:crypto";
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@subdata/proto/grpc/health/v1/health_pb";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { describe, expect, it } from "vitest";
import { errorDetailOf, ErrorReason } from "./errors.ts";
import { createHealthService, createHealthState } from "./health.ts";
import { type CallerCredentials, requireCallerCredential, sendServiceCredential, tokenSha256 } from "./service-credential.ts";
import { createCapturedLogger } from "./test-support/captured-logger.ts";
import { rpcError } from "./test-support/rpc-error.ts";

const token = () => randomBytes(32).toString("base64url");
const GATEWAY_OLD = token();
const GATEWAY_NEW = token();
const CONSOLE = token();
const STRANGER = token();

const credentials: CallerCredentials = { gateway: [tokenSha256(GATEWAY_NEW), tokenSha256(GATEWAY_OLD)], console: [tokenSha256(CONSOLE)] };

/** In-memory: AuditService behind the caller check, a client presenting `presented` (or nothing). */
function clientsOf(presented?: string) {
  const { logger, lines } = createCapturedLogger({ name: "credential-test", level: "info" });
  const transport = createRouterTransport(
    (router) => {
      router.service(AuditService, {
        recordRead: async () => ({ auditEventId: "aud_1" }),
        recordReads: async () => ({ results: [] }),
        listAuditEvents: async () => ({ auditEvents: [], nextPageToken: "" }),
      });
      router.service(Health, createHealthService(createHealthState(), [AuditService.typeName]));
    },
    {
      router: { interceptors: [requireCallerCredential({ credentials, logger })] },
      transport: { interceptors: presented === undefined ? [] : [sendServiceCredential(presented)] },
    },
  );
  return { audit: createClient(AuditService, transport), health: createClient(Health, transport), lines };
}

describe("caller credentials", () => {
  it("accepts both hashes of a caller during a rotation", async () => {
    for (const presented of [GATEWAY_NEW, GATEWAY_OLD]) {
      expect(await clientsOf(presented).audit.recordRead({ merchantId: "mer_1" })).toMatchObject({ auditEventId: "aud_1" });
    }
  });

  it("refuses an unknown, altered or missing token as unauthenticated", async () => {
    for (const presented of [STRANGER, `${GATEWAY_NEW}x`, GATEWAY_NEW.slice(1), tokenSha256(GATEWAY_NEW).toString("hex"), "", undefined]) {
      const error = await rpcError(clientsOf(presented).audit.recordRead({ merchantId: "mer_1" }));
      expect(error.code, String(presented)).toBe(Code.Unauthenticated);
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.SERVICE_CREDENTIAL_INVALID);
    }
  });

  it("refuses a known caller outside the RPC's row with PERMISSION_DENIED, logging the caller and RPC but no secret", async () => {
    const { audit, lines } = clientsOf(CONSOLE);
    const error = await rpcError(audit.recordRead({ merchantId: "mer_1" }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toBe("the console credential may not call subdata.audit.v1.AuditService/RecordRead");
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.level === "warn");
    expect(logged).toEqual([expect.objectContaining({ caller: "console", rpc: "subdata.audit.v1.AuditService/RecordRead" })]);
    expect(lines.join("")).not.toContain(CONSOLE);
    // The console's own row still answers.
    await expect(audit.listAuditEvents({ merchantId: "mer_1" })).resolves.toBeDefined();
  });

  it("does not take a token without the Bearer scheme", async () => {
    const { audit } = clientsOf();
    const error = await rpcError(audit.recordRead({ merchantId: "mer_1" }, { headers: { authorization: GATEWAY_NEW } }));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  it("lets health checks through without a credential (Kubernetes probes send none)", async () => {
    const response = await clientsOf().health.check({ service: "" });
    expect(response.status).toBe(ServingStatus.SERVING);
  });
});
