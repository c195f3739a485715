import { randomUUID } from "node:crypto";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { DurationSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { RecordReadRequestSchema } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { errorDetailOf, ErrorReason } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures } from "../support/fixtures.ts";
import { runCli } from "../cli/run-cli.ts";
import { startAuthService, type AuthHarness } from "./auth-harness.ts";
import { rpcError } from "@subdata/runtime/test-support";

type RecordInit = MessageInitShape<typeof RecordReadRequestSchema>;

function read(merchantId: string, apiKeyId: string, overrides: Partial<RecordInit> = {}): RecordInit {
  return {
    merchantId,
    apiKeyId,
    requestId: `req_${randomUUID()}`,
    method: "GET",
    route: "/v1/subscriptions",
    query: "limit=2&status=ACTIVE",
    resourceIds: ["sub_a", "sub_b"],
    resultCount: 2,
    status: 200,
    clientIp: "198.51.100.4",
    userAgent: "curl/8.5",
    latency: create(DurationSchema, { seconds: 0n, nanos: 1_234_000 }),
    ...overrides,
  };
}

describe("the audit service", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  const fixtures = createFixtures(admin);
  let auth: AuthHarness;

  beforeAll(async () => {
    auth = await startAuthService();
  });

  afterAll(async () => {
    await auth?.close();
    await admin.end();
  });

  it("writes every one of 200 concurrent records before answering, in fewer INSERTs than records", async () => {
    const merchantId = await fixtures.merchant();
    const flushesBefore = auth.auditFlushes.length;
    const statementsBefore = auth.statements.length;
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => auth.audit.recordRead(read(merchantId, "key_load", { resultCount: i }))));
    const ids = answers.map((answer) => answer.auditEventId);
    expect(new Set(ids).size).toBe(200);
    // Every answer came after its row committed: all 200 are readable now, without waiting.
    const rows = await admin.query("SELECT id, result_count FROM audit_events WHERE merchant_id = $1", [merchantId]);
    expect(rows.rows.map((row) => row.id).sort()).toEqual([...ids].sort());
    const flushes = auth.auditFlushes.slice(flushesBefore);
    const inserts = auth.statements.slice(statementsBefore).filter((sql) => /INSERT INTO audit_events/.test(sql));
    expect(flushes.every((flush) => flush.ok)).toBe(true);
    expect(flushes.reduce((sum, flush) => sum + flush.size, 0)).toBe(200);
    expect(inserts.length).toBe(flushes.length);
    expect(inserts.length).toBeLessThan(200);
  });

  it("keeps every field of a record as sent", async () => {
    const merchantId = await fixtures.merchant();
    const occurredAt = create(TimestampSchema, { seconds: 1_790_000_000n, nanos: 123_456_000 });
    const sent = read(merchantId, "key_fields", { occurredAt, status: 404, resultCount: 0, resourceIds: ["sub_missing"], query: "" });
    const { auditEventId } = await auth.audit.recordRead(sent);
    const page = await auth.audit.listAuditEvents({ merchantId });
    expect(page.auditEvents).toHaveLength(1);
    expect(page.auditEvents[0]).toMatchObject({
      id: auditEventId,
      merchantId,
      apiKeyId: "key_fields",
      requestId: sent.requestId,
      occurredAt: { seconds: 1_790_000_000n, nanos: 123_456_000 },
      method: "GET",
      route: "/v1/subscriptions",
      query: "",
      resourceIds: ["sub_missing"],
      resultCount: 0,
      status: 404,
      clientIp: "198.51.100.4",
      userAgent: "curl/8.5",
      latency: { seconds: 0n, nanos: 1_234_000 },
    });
  });

  it("refuses a record without its required fields", async () => {
    const merchantId = await fixtures.merchant();
    for (const missing of [{ merchantId: "" }, { apiKeyId: "" }, { requestId: "" }, { status: 0 }]) {
      const error = await rpcError(auth.audit.recordRead(read(merchantId, "key_x", missing)));
      expect(error.code).toBe(Code.InvalidArgument);
    }
  });

  it("records a RecordReads batch in one INSERT, refusing only its invalid reads", async () => {
    const merchantId = await fixtures.merchant();
    const statementsBefore = auth.statements.length;
    const reads = [
      read(merchantId, "key_batch", { resultCount: 1 }),
      read(merchantId, "key_batch", { status: 0 }),
      read(merchantId, "key_batch", { resultCount: 3, userAgent: "agent\u0000with NUL" }),
      read(merchantId, "", { resultCount: 4 }),
    ];
    const { results } = await auth.audit.recordReads({ reads });
    expect(results.map((result) => result.outcome.case)).toEqual(["auditEventId", "invalidReason", "auditEventId", "invalidReason"]);
    expect(results[1]?.outcome.value).toContain("status");
    expect(results[3]?.outcome.value).toContain("api_key_id");
    const rows = await admin.query("SELECT id, result_count, user_agent FROM audit_events WHERE merchant_id = $1 ORDER BY result_count", [merchantId]);
    expect(rows.rows).toEqual([
      { id: results[0]?.outcome.value, result_count: 1, user_agent: "curl/8.5" },
      { id: results[2]?.outcome.value, result_count: 3, user_agent: "agentwith NUL" },
    ]);
    const inserts = auth.statements.slice(statementsBefore).filter((sql) => /INSERT INTO audit_events/.test(sql));
    expect(inserts).toHaveLength(1);
  });

  it("keeps each read's resource ids apart within one INSERT, none, one or many, whatever their characters", async () => {
    const merchantId = await fixtures.merchant();
    const idLists = [
      [],
      ["sub_only"],
      Array.from({ length: 50 }, (_, i) => `sub_${i.toString(16).padStart(32, "0")}`),
      [],
      ['sub_{"quoted",comma}', "sub_ünïcode", "sub_back\\slash", ""],
    ];
    const reads = idLists.map((resourceIds, i) => read(merchantId, "key_ids", { resourceIds, resultCount: i }));
    const { results } = await auth.audit.recordReads({ reads });
    expect(results.every((result) => result.outcome.case === "auditEventId")).toBe(true);
    const rows = await admin.query("SELECT result_count, resource_ids FROM audit_events WHERE merchant_id = $1 ORDER BY result_count", [merchantId]);
    expect(rows.rows.map((row) => row.resource_ids)).toEqual(idLists);
    // Rows of a 50-row page are kept inline (migration 20261125000100000), not moved to TOAST: set on
    // every partition, the partitioned table having no storage of its own.
    const options = await admin.query<{ reloptions: string[] | null }>(
      "SELECT c.reloptions FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass",
    );
    expect(options.rows.length).toBeGreaterThan(1);
    for (const row of options.rows) expect(row.reloptions).toContain("toast_tuple_target=8160");
  });

  it("refuses an empty or oversized RecordReads call", async () => {
    const merchantId = await fixtures.merchant();
    for (const reads of [[], Array.from({ length: 1_001 }, () => read(merchantId, "key_many"))]) {
      const error = await rpcError(auth.audit.recordReads({ reads }));
      expect(error.code).toBe(Code.InvalidArgument);
    }
    const rows = await admin.query("SELECT count(*)::int AS n FROM audit_events WHERE merchant_id = $1", [merchantId]);
    expect(rows.rows[0].n).toBe(0);
  });

  it("lists one merchant's events oldest first, by key when asked, page by page", async () => {
    const merchantId = await fixtures.merchant();
    const other = await fixtures.merchant();
    const base = 1_800_000_000n;
    const expected: string[] = [];
    // Written newest first, with ties on occurred_at, to prove the order comes from (occurred_at, id).
    for (let i = 9; i >= 0; i--) {
      const occurredAt = create(TimestampSchema, { seconds: base + BigInt(Math.floor(i / 2)) });
      const answer = await auth.audit.recordRead(read(merchantId, i % 2 === 0 ? "key_even" : "key_odd", { occurredAt }));
      expected.push(`${base + BigInt(Math.floor(i / 2))}|${answer.auditEventId}|${i % 2 === 0 ? "key_even" : "key_odd"}`);
    }
    await auth.audit.recordRead(read(other, "key_even", { occurredAt: create(TimestampSchema, { seconds: base }) }));
    const ordered = expected.sort();

    async function walk(apiKeyId: string): Promise<string[]> {
      const seen: string[] = [];
      let pageToken = "";
      do {
        const page = await auth.audit.listAuditEvents({ merchantId, apiKeyId, pageSize: 3, pageToken });
        for (const event of page.auditEvents) {
          expect(event.merchantId).toBe(merchantId);
          seen.push(`${event.occurredAt!.seconds}|${event.id}|${event.apiKeyId}`);
        }
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return seen;
    }

    expect(await walk("")).toEqual(ordered);
    expect(await walk("key_even")).toEqual(ordered.filter((line) => line.endsWith("key_even")));

    const first = await auth.audit.listAuditEvents({ merchantId, pageSize: 3 });
    for (const misuse of [
      { merchantId, apiKeyId: "key_even", pageToken: first.nextPageToken },
      { merchantId: other, pageToken: first.nextPageToken },
      { merchantId, pageToken: `${first.nextPageToken}x` },
    ]) {
      const error = await rpcError(auth.audit.listAuditEvents({ ...misuse, pageSize: 3 }));
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
    }
  });
});

describe("the audit list's filters", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  const fixtures = createFixtures(admin);
  let auth: AuthHarness;

  beforeAll(async () => {
    auth = await startAuthService();
  });

  afterAll(async () => {
    await auth?.close();
    await admin.end();
  });

  const base = 1_810_000_000n;
  const second = (offset: number) => create(TimestampSchema, { seconds: base + BigInt(offset) });

  it("narrows by key, route, status range and time range together, and pages each filtered list completely", async () => {
    const merchantId = await fixtures.merchant();
    const other = await fixtures.merchant();
    const routes = ["/v1/subscriptions", "/v1/subscriptions/{id}", "/v1/orders"];
    const statuses = [200, 404, 401, 500, 429];
    const written: Array<{ id: string; key: string; route: string; status: number; at: number }> = [];
    for (let i = 0; i < 60; i++) {
      const key = i % 2 === 0 ? "key_a" : "key_b";
      const route = routes[i % 3]!;
      const status = statuses[i % 5]!;
      const answer = await auth.audit.recordRead(read(merchantId, key, { route, status, occurredAt: second(i) }));
      written.push({ id: answer.auditEventId, key, route, status, at: i });
    }
    // The same shape for another merchant: never in the lists below.
    for (let i = 0; i < 10; i++) await auth.audit.recordRead(read(other, "key_a", { route: routes[0], status: 200, occurredAt: second(i) }));

    async function walk(filter: Record<string, unknown>): Promise<string[]> {
      const seen: string[] = [];
      let pageToken = "";
      do {
        const page = await auth.audit.listAuditEvents({ merchantId, ...filter, pageSize: 4, pageToken });
        for (const event of page.auditEvents) expect(event.merchantId).toBe(merchantId);
        seen.push(...page.auditEvents.map((event) => event.id));
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return seen;
    }
    const expected = (keep: (row: (typeof written)[number]) => boolean) => written.filter(keep).map((row) => row.id);

    expect(await walk({ route: "/v1/subscriptions/{id}" })).toEqual(expected((row) => row.route === "/v1/subscriptions/{id}"));
    expect(await walk({ minStatus: 400, maxStatus: 499 })).toEqual(expected((row) => row.status >= 400 && row.status <= 499));
    expect(await walk({ minStatus: 500 })).toEqual(expected((row) => row.status >= 500));
    expect(await walk({ startTime: second(10), endTime: second(25) })).toEqual(expected((row) => row.at >= 10 && row.at < 25));
    const all = { apiKeyId: "key_a", route: "/v1/orders", minStatus: 200, maxStatus: 499, startTime: second(5) };
    const both = expected((row) => row.key === "key_a" && row.route === "/v1/orders" && row.status >= 200 && row.status <= 499 && row.at >= 5);
    expect(both.length).toBeGreaterThan(2);
    expect(await walk(all)).toEqual(both);
    expect(await walk({ route: "/v1/nothing" })).toEqual([]);

    // A cursor is bound to its filter: another route, status or range refuses it.
    const first = await auth.audit.listAuditEvents({ merchantId, ...all, pageSize: 1 });
    for (const changed of [{ route: "/v1/subscriptions" }, { minStatus: 201 }, { maxStatus: 0 }, { startTime: second(6) }, { endTime: second(50) }]) {
      const error = await rpcError(auth.audit.listAuditEvents({ merchantId, ...all, ...changed, pageSize: 1, pageToken: first.nextPageToken }));
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
    }
  });

  it("are the CLI's too: audit list --route --status --since --until selects the same events", async () => {
    const merchantId = await fixtures.merchant();
    const ids: string[] = [];
    for (const [i, route, status] of [
      [0, "/v1/orders", 200],
      [1, "/v1/orders", 404],
      [2, "/v1/subscriptions", 404],
      [3, "/v1/orders", 503],
      [4, "/v1/orders", 429],
    ] as const) {
      ids.push((await auth.audit.recordRead(read(merchantId, "key_cli", { route, status, occurredAt: second(i) }))).auditEventId);
    }
    const env = { SUBDATA_AUTH_URL: auth.baseUrl, SUBDATA_CLI_TOKEN: auth.tokens.cli };
    const list = async (...filters: string[]) => {
      const run = await runCli(["audit", "list", "--merchant", merchantId, ...filters, "--json"], { env });
      expect(run.stderr).toBe("");
      return (JSON.parse(run.stdout) as { audit_events: Array<{ id: string }> }).audit_events.map((event) => event.id);
    };
    const at = (offset: number) => new Date(Number(base + BigInt(offset)) * 1000).toISOString();
    expect(await list("--route", "/v1/orders", "--status", "errors")).toEqual([ids[1], ids[3], ids[4]]);
    expect(await list("--status", "404")).toEqual([ids[1], ids[2]]);
    expect(await list("--status", "4XX", "--since", at(2), "--until", at(4))).toEqual([ids[2]]);
    const refused = await runCli(["audit", "list", "--merchant", merchantId, "--status", "4xxx"], { env });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("--status");
  });

  it("refuses a status outside 100–599, a reversed status range and an empty or reversed time range", async () => {
    const merchantId = await fixtures.merchant();
    for (const [field, filter] of [
      ["min_status", { minStatus: 99 }],
      ["max_status", { maxStatus: 600 }],
      ["max_status", { minStatus: 500, maxStatus: 400 }],
      ["end_time", { startTime: second(10), endTime: second(10) }],
      ["end_time", { startTime: second(10), endTime: second(9) }],
      ["route", { route: "/v1/\u0000" }],
    ] as const) {
      const error = await rpcError(auth.audit.listAuditEvents({ merchantId, ...filter }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toContain(field);
    }
  });
});

describe("when the audit log cannot be written", () => {
  it("answers UNAVAILABLE for exactly the records of the failed batch", async () => {
    let failInserts = true;
    const auth = await startAuthService({
      wrapDb: (db) => ({
        query: ((...args: Parameters<typeof db.query>) => {
          const [statement] = args as unknown as [string | { text: string }];
          const text = typeof statement === "string" ? statement : statement.text;
          if (failInserts && text.includes("INSERT INTO audit_events")) {
            return Promise.reject(Object.assign(new Error("Connection terminated unexpectedly"), { code: "08006" }));
          }
          return (db.query as (...a: unknown[]) => unknown)(...args);
        }) as typeof db.query,
      }),
    });
    const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 1 });
    try {
      const merchantId = await createFixtures(admin).merchant();
      const error = await rpcError(auth.audit.recordRead(read(merchantId, "key_down")));
      expect(error.code).toBe(Code.Unavailable);
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.DEPENDENCY_UNAVAILABLE);
      const batch = await rpcError(auth.audit.recordReads({ reads: [read(merchantId, "key_down"), read(merchantId, "key_down")] }));
      expect(batch.code).toBe(Code.Unavailable);
      failInserts = false;
      await auth.audit.recordRead(read(merchantId, "key_down"));
      const rows = await admin.query("SELECT count(*)::int AS n FROM audit_events WHERE merchant_id = $1", [merchantId]);
      expect(rows.rows[0].n).toBe(1);
    } finally {
      await auth.close();
      await admin.end();
    }
  });
});

describe("the audit table is append-only in the database", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 1 });
  const asAuth = new pg.Pool({ connectionString: inject("roleDatabaseUrls").auth, max: 1 });
  let merchantId = "";

  beforeAll(async () => {
    merchantId = await createFixtures(admin).merchant();
    await asAuth.query(
      `INSERT INTO audit_events (id, occurred_at, merchant_id, api_key_id, request_id, method, route, query, resource_ids,
         result_count, status, client_ip, user_agent, latency_micros)
       VALUES ($1, now(), $2, 'key_ro', 'req', 'GET', '/v1/orders', '', '{}', 0, 200, '', '', 1)`,
      [`aud_${randomUUID().replaceAll("-", "")}`, merchantId],
    );
  });

  afterAll(async () => {
    await asAuth.end();
    await admin.end();
  });

  it.each([
    ["UPDATE", "UPDATE audit_events SET status = 500 WHERE merchant_id = $1"],
    ["DELETE", "DELETE FROM audit_events WHERE merchant_id = $1"],
    ["TRUNCATE", "TRUNCATE audit_events"],
  ])("refuses %s to the auth role", async (verb, sql) => {
    const params = verb === "TRUNCATE" ? [] : [merchantId];
    await expect(asAuth.query(sql, params)).rejects.toThrow(/permission denied/);
  });

  it.each([
    ["UPDATE", "UPDATE audit_events SET status = 500 WHERE merchant_id = $1"],
    ["DELETE", "DELETE FROM audit_events WHERE merchant_id = $1"],
    ["TRUNCATE", "TRUNCATE audit_events"],
  ])("refuses %s even to the superuser, through the triggers", async (verb, sql) => {
    const params = verb === "TRUNCATE" ? [] : [merchantId];
    await expect(admin.query(sql, params)).rejects.toThrow(/append-only/);
    const still = await admin.query("SELECT status FROM audit_events WHERE merchant_id = $1", [merchantId]);
    expect(still.rows).toEqual([{ status: 200 }]);
  });

  it("grants no service role anything but SELECT and INSERT on the logs", async () => {
    const privileges = await admin.query<{ role: string; relation: string; privilege: string }>(
      `SELECT r.rolname AS role, t.relation, p.privilege
       FROM pg_roles r
       CROSS JOIN (VALUES ('audit_events'), ('security_events')) AS t(relation)
       CROSS JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) AS p(privilege)
       WHERE r.rolname LIKE 'subdata\\_%' AND has_table_privilege(r.rolname, t.relation, p.privilege)`,
    );
    expect(privileges.rows.filter((row) => row.privilege !== "SELECT" && row.privilege !== "INSERT")).toEqual([]);
    expect(privileges.rows.every((row) => row.role === "subdata_auth")).toBe(true);
  });
});
