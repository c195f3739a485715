import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@subdata/proto/grpc/health/v1/health_pb";
import { describe, expect, it } from "vitest";
import { errorDetailOf, ErrorReason } from "./errors.ts";
import { createHealthService, createHealthState } from "./health.ts";
import { requireServiceCredential, sendServiceCredential } from "./service-credential.ts";
import { rpcError } from "./test-support/rpc-error.ts";

const OLD = "a".repeat(32);
const NEW = "b".repeat(40);
const OTHER = "c".repeat(32);

/** In-memory: a server checking credentials with `check`, a client presenting `presented` (or nothing). */
function clientsOf(check: ReturnType<typeof requireServiceCredential>, presented?: string) {
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
      router: { interceptors: [check] },
      transport: { interceptors: presented === undefined ? [] : [sendServiceCredential(presented)] },
    },
  );
  return { audit: createClient(AuditService, transport), health: createClient(Health, transport) };
}

describe("service credential", () => {
  it("answers the main token and every accepted one (a rotation: main NEW, OLD still accepted)", async () => {
    const check = requireServiceCredential(NEW, [OLD]);
    for (const presented of [NEW, OLD]) {
      expect(await clientsOf(check, presented).audit.recordRead({ merchantId: "mer_1" })).toMatchObject({ auditEventId: "aud_1" });
    }
  });

  it("refuses a token that is neither the main one nor accepted, and a missing one, as unauthenticated", async () => {
    const check = requireServiceCredential(NEW, [OLD]);
    for (const presented of [OTHER, `${NEW}x`, NEW.slice(1), undefined]) {
      const error = await rpcError(clientsOf(check, presented).audit.recordRead({ merchantId: "mer_1" }));
      expect(error.code, String(presented)).toBe(Code.Unauthenticated);
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.SERVICE_CREDENTIAL_INVALID);
    }
  });

  it("accepts only the main token when nothing else is accepted", async () => {
    const check = requireServiceCredential(NEW);
    await expect(clientsOf(check, NEW).audit.recordRead({ merchantId: "mer_1" })).resolves.toBeDefined();
    expect((await rpcError(clientsOf(check, OLD).audit.recordRead({ merchantId: "mer_1" }))).code).toBe(Code.Unauthenticated);
  });

  it("does not take an accepted value for the bare header: the Bearer scheme is required for every candidate", async () => {
    const check = requireServiceCredential(NEW, [OLD]);
    const transport = createRouterTransport(
      (router) =>
        router.service(AuditService, {
          recordRead: async () => ({ auditEventId: "aud_1" }),
          recordReads: async () => ({ results: [] }),
          listAuditEvents: async () => ({ auditEvents: [], nextPageToken: "" }),
        }),
      { router: { interceptors: [check] } },
    );
    const audit = createClient(AuditService, transport);
    const error = await rpcError(audit.recordRead({ merchantId: "mer_1" }, { headers: { authorization: OLD } }));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  it("lets health checks through without a credential (Kubernetes probes send none)", async () => {
    const response = await clientsOf(requireServiceCredential(NEW, [OLD])).health.check({ service: "" });
    expect(response.status).toBe(ServingStatus.SERVING);
  });
});
