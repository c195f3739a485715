import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { apiKeyRevokedSubject } from "@subdata/events";
import { ApiKeyRevokedEventSchema, type ApiKeyRevokedEvent } from "@subdata/proto/subdata/events/v1/api_key_event_pb";
import { errorDetailOf, ErrorReason } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures } from "../support/fixtures.ts";
import { startAuthService, type AuthHarness } from "./auth-harness.ts";
import { rpcError } from "@subdata/runtime/test-support";

async function expectFailure(promise: Promise<unknown>, code: Code, reason: ErrorReason) {
  const error = await rpcError(promise);
  expect(Code[error.code]).toBe(Code[code]);
  expect(errorDetailOf(error)?.reason).toBe(reason);
}

/** Polls `check` until it returns a value, for at most ~10 s. */
async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("condition not met in time");
}

describe("the API key service", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  const fixtures = createFixtures(admin);
  let auth: AuthHarness;
  let nats: NatsConnection;
  const revocations: ApiKeyRevokedEvent[] = [];

  beforeAll(async () => {
    auth = await startAuthService();
    nats = await connect({ servers: inject("natsUrl") });
    const subscription = nats.subscribe(apiKeyRevokedSubject);
    void (async () => {
      for await (const message of subscription) revocations.push(fromBinary(ApiKeyRevokedEventSchema, message.data));
    })();
    await nats.flush();
  });

  afterAll(async () => {
    await nats?.close();
    await auth?.close();
    await admin.end();
  });

  const context = () => ({ clientIp: "203.0.113.7", userAgent: "vitest", requestId: `req_${randomUUID()}` });

  it("authenticates a new key, refuses it as revoked once revoked, and tells the gateways over NATS", async () => {
    const merchantId = await fixtures.merchant();
    const created = await auth.apiKeys.createApiKey({ merchantId, name: "checkout" });
    expect(created.key).toMatch(/^sds_[0-9A-Za-z]{38}$/);
    expect(created.apiKey).toMatchObject({ merchantId, name: "checkout", displayPrefix: created.key.slice(0, 8) });
    expect(created.apiKey?.id).toMatch(/^key_/);

    const ok = await auth.apiKeys.authenticateApiKey({ key: created.key, ...context() });
    expect(ok).toMatchObject({ apiKeyId: created.apiKey!.id, merchantId });
    expect(ok.expiresAt).toBeUndefined();

    const revoked = await auth.apiKeys.revokeApiKey({ merchantId, apiKeyId: created.apiKey!.id });
    expect(revoked.apiKey?.revokedAt).toBeDefined();
    await expectFailure(auth.apiKeys.authenticateApiKey({ key: created.key, ...context() }), Code.Unauthenticated, ErrorReason.API_KEY_REVOKED);

    const event = await eventually(async () => revocations.find((e) => e.apiKeyId === created.apiKey!.id));
    expect(event.merchantId).toBe(merchantId);
    expect(event.revokedAt).toEqual(revoked.apiKey!.revokedAt);
  });

  it("revokes idempotently, keeping the first revocation time", async () => {
    const merchantId = await fixtures.merchant();
    const { apiKey } = await auth.apiKeys.createApiKey({ merchantId });
    const first = await auth.apiKeys.revokeApiKey({ merchantId, apiKeyId: apiKey!.id });
    const second = await auth.apiKeys.revokeApiKey({ merchantId, apiKeyId: apiKey!.id });
    expect(second.apiKey?.revokedAt).toEqual(first.apiKey?.revokedAt);
  });

  it("answers NOT_FOUND when revoking another merchant's key, and leaves it working", async () => {
    const owner = await fixtures.merchant();
    const other = await fixtures.merchant();
    const created = await auth.apiKeys.createApiKey({ merchantId: owner });
    await expectFailure(auth.apiKeys.revokeApiKey({ merchantId: other, apiKeyId: created.apiKey!.id }), Code.NotFound, ErrorReason.NOT_FOUND);
    await expect(auth.apiKeys.authenticateApiKey({ key: created.key, ...context() })).resolves.toMatchObject({ merchantId: owner });
  });

  it("refuses an expired key as expired", async () => {
    const merchantId = await fixtures.merchant();
    const expiresAt = timestampFromDate(new Date(Date.now() + 3_600_000));
    const created = await auth.apiKeys.createApiKey({ merchantId, expiresAt });
    const ok = await auth.apiKeys.authenticateApiKey({ key: created.key, ...context() });
    expect(ok.expiresAt?.seconds).toBe(expiresAt.seconds);
    // Move the expiry into the past rather than waiting for it.
    await admin.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [created.apiKey!.id]);
    await expectFailure(auth.apiKeys.authenticateApiKey({ key: created.key, ...context() }), Code.Unauthenticated, ErrorReason.API_KEY_EXPIRED);
  });

  it("refuses missing, malformed and bad-checksum keys without reading the database, and logs them", async () => {
    const merchantId = await fixtures.merchant();
    const { key } = await auth.apiKeys.createApiKey({ merchantId });
    const badChecksum = key.slice(0, 20) + (key[20] === "a" ? "b" : "a") + key.slice(21);
    const attempts = [
      { key: "", reason: "missing", prefix: null },
      { key: "Bearer nonsense", reason: "malformed", prefix: null },
      { key: `${key}x`, reason: "malformed", prefix: null },
      { key: key.replace("sds_", "sdz_"), reason: "malformed", prefix: null },
      { key: badChecksum, reason: "bad_checksum", prefix: badChecksum.slice(0, 8) },
    ];
    for (const attempt of attempts) {
      const before = auth.statements.length;
      const ctx = context();
      await expectFailure(auth.apiKeys.authenticateApiKey({ key: attempt.key, ...ctx }), Code.Unauthenticated, ErrorReason.API_KEY_INVALID);
      const sent = auth.statements.slice(before);
      // The only statement is the security log's INSERT: nothing read api_keys.
      expect(sent.some((sql) => /api_keys/.test(sql))).toBe(false);
      expect(sent.every((sql) => /^\s*INSERT INTO security_events/.test(sql))).toBe(true);
      const logged = await admin.query("SELECT reason, key_prefix, api_key_id, client_ip, user_agent FROM security_events WHERE request_id = $1", [
        ctx.requestId,
      ]);
      expect(logged.rows).toEqual([{ reason: attempt.reason, key_prefix: attempt.prefix, api_key_id: null, client_ip: ctx.clientIp, user_agent: "vitest" }]);
    }
  });

  it("refuses a well-formed key it does not know as invalid, after one lookup by hash", async () => {
    const { generateApiKey } = await import("@subdata/auth");
    const unknown = generateApiKey();
    const before = auth.statements.length;
    const ctx = context();
    await expectFailure(auth.apiKeys.authenticateApiKey({ key: unknown, ...ctx }), Code.Unauthenticated, ErrorReason.API_KEY_INVALID);
    expect(auth.statements.slice(before).filter((sql) => /FROM api_keys/.test(sql))).toHaveLength(1);
    const logged = await admin.query("SELECT reason, key_prefix FROM security_events WHERE request_id = $1", [ctx.requestId]);
    expect(logged.rows).toEqual([{ reason: "unknown", key_prefix: unknown.slice(0, 8) }]);
  });

  it("records revoked and expired attempts with the key id", async () => {
    const merchantId = await fixtures.merchant();
    const created = await auth.apiKeys.createApiKey({ merchantId });
    await auth.apiKeys.revokeApiKey({ merchantId, apiKeyId: created.apiKey!.id });
    const ctx = context();
    await rpcError(auth.apiKeys.authenticateApiKey({ key: created.key, ...ctx }));
    const logged = await admin.query("SELECT reason, api_key_id FROM security_events WHERE request_id = $1", [ctx.requestId]);
    expect(logged.rows).toEqual([{ reason: "revoked", api_key_id: created.apiKey!.id }]);
  });

  it("keeps last_used_at roughly current", async () => {
    const merchantId = await fixtures.merchant();
    const created = await auth.apiKeys.createApiKey({ merchantId });
    expect(created.apiKey?.lastUsedAt).toBeUndefined();
    await auth.apiKeys.authenticateApiKey({ key: created.key, ...context() });
    await eventually(async () => {
      const row = await admin.query("SELECT last_used_at FROM api_keys WHERE id = $1", [created.apiKey!.id]);
      return row.rows[0].last_used_at ?? undefined;
    });
  });

  it("stores the key nowhere and logs it nowhere", async () => {
    const merchantId = await fixtures.merchant();
    const created = await auth.apiKeys.createApiKey({ merchantId, name: "secret-check" });
    const key = created.key;
    await auth.apiKeys.authenticateApiKey({ key, ...context() });
    const badChecksum = key.slice(0, -1) + (key.endsWith("0") ? "1" : "0");
    await rpcError(auth.apiKeys.authenticateApiKey({ key: badChecksum, ...context() }));
    await auth.apiKeys.revokeApiKey({ merchantId, apiKeyId: created.apiKey!.id });
    await rpcError(auth.apiKeys.authenticateApiKey({ key, ...context() }));

    // The secret part: everything after the display prefix (which is meant to be shown).
    const secret = key.slice(8, 36);
    const columns = await admin.query<{ table_name: string; column_name: string; data_type: string }>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name IN ('api_keys', 'security_events')
         AND data_type IN ('text', 'bytea', 'ARRAY', 'character varying')`,
    );
    expect(columns.rows.length).toBeGreaterThanOrEqual(8);
    for (const { table_name, column_name, data_type } of columns.rows) {
      const found =
        data_type === "bytea"
          ? await admin.query(`SELECT 1 FROM ${table_name} WHERE position($1::bytea IN ${column_name}) > 0 OR position($2::bytea IN ${column_name}) > 0`, [
              Buffer.from(key),
              Buffer.from(secret),
            ])
          : await admin.query(`SELECT 1 FROM ${table_name} WHERE ${column_name}::text LIKE '%' || $1 || '%'`, [secret]);
      expect(found.rowCount, `${table_name}.${column_name}`).toBe(0);
    }
    expect(auth.logs.length).toBeGreaterThan(0);
    expect(auth.logs.filter((line) => line.includes(secret))).toEqual([]);
  });

  it("validates CreateApiKey: the merchant must exist, names are short, expiry is in the future", async () => {
    const merchantId = await fixtures.merchant();
    await expectFailure(auth.apiKeys.createApiKey({ merchantId: "mer_doesnotexist" }), Code.NotFound, ErrorReason.NOT_FOUND);
    await expectFailure(auth.apiKeys.createApiKey({ merchantId: "" }), Code.InvalidArgument, ErrorReason.INVALID_ARGUMENT);
    await expectFailure(auth.apiKeys.createApiKey({ merchantId, name: "x".repeat(101) }), Code.InvalidArgument, ErrorReason.INVALID_ARGUMENT);
    await expect(auth.apiKeys.createApiKey({ merchantId, name: "é".repeat(100) })).resolves.toBeDefined();
    await expectFailure(
      auth.apiKeys.createApiKey({ merchantId, expiresAt: timestampFromDate(new Date(Date.now() - 1000)) }),
      Code.InvalidArgument,
      ErrorReason.INVALID_ARGUMENT,
    );
  });

  it("lists a merchant's keys newest first, page by page, never another merchant's", async () => {
    const merchantId = await fixtures.merchant();
    const other = await fixtures.merchant();
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await auth.apiKeys.createApiKey({ merchantId, name: `k${i}` })).apiKey!.id);
    await auth.apiKeys.createApiKey({ merchantId: other, name: "other" });

    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await auth.apiKeys.listApiKeys({ merchantId, pageSize: 3, pageToken });
      expect(page.apiKeys.length).toBeLessThanOrEqual(3);
      for (const key of page.apiKeys) expect(key.merchantId).toBe(merchantId);
      seen.push(...page.apiKeys.map((key) => key.id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== "");
    expect(pages).toBe(3);
    expect(seen).toEqual([...made].reverse());

    const first = await auth.apiKeys.listApiKeys({ merchantId, pageSize: 3 });
    await expectFailure(
      auth.apiKeys.listApiKeys({ merchantId: other, pageSize: 3, pageToken: first.nextPageToken }),
      Code.InvalidArgument,
      ErrorReason.INVALID_PAGE_TOKEN,
    );
    await expectFailure(auth.apiKeys.listApiKeys({ merchantId, pageSize: 201 }), Code.InvalidArgument, ErrorReason.INVALID_ARGUMENT);
  });

  it("refuses calls without the service credential", async () => {
    const merchantId = await fixtures.merchant();
    await expectFailure(auth.anonymous.apiKeys.createApiKey({ merchantId }), Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID);
    await expectFailure(auth.anonymous.audit.listAuditEvents({ merchantId }), Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID);
    await expectFailure(auth.wrongCredential.apiKeys.listApiKeys({ merchantId }), Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID);
  });
});

describe("revocation while NATS is down", () => {
  it("still commits the revocation and answers", async () => {
    const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 1 });
    // Nothing listens on port 1.
    const auth = await startAuthService({ natsUrl: "nats://127.0.0.1:1" });
    try {
      const merchantId = await createFixtures(admin).merchant();
      const created = await auth.apiKeys.createApiKey({ merchantId });
      const revoked = await auth.apiKeys.revokeApiKey({ merchantId, apiKeyId: created.apiKey!.id });
      expect(revoked.apiKey?.revokedAt).toBeDefined();
      const row = await admin.query("SELECT revoked_at FROM api_keys WHERE id = $1", [created.apiKey!.id]);
      expect(row.rows[0].revoked_at).not.toBeNull();
      await expectFailure(
        auth.apiKeys.authenticateApiKey({ key: created.key, clientIp: "", userAgent: "", requestId: "r" }),
        Code.Unauthenticated,
        ErrorReason.API_KEY_REVOKED,
      );
    } finally {
      await auth.close();
      await admin.end();
    }
    expect(auth.logs.some((line) => line.includes("could not publish revocation events"))).toBe(true);
  });
});
