import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "@subdata/proto/grpc/health/v1/health_pb";
import { ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { errorDetailOf } from "@subdata/runtime";
import { databaseEnumLabels } from "@subdata/query";
import { orderStatements } from "../../services/query/src/order-repository.ts";
import { subscriptionStatements } from "../../services/query/src/subscription-repository.ts";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFixtures, type Fixtures } from "../support/fixtures.ts";
import { type RunningQueryServer, startQueryServer } from "../support/query-server.ts";
import { rpcError } from "./assertions.ts";

describe("the query server", () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  let fixtures: Fixtures;
  let query: RunningQueryServer;

  beforeAll(async () => {
    fixtures = createFixtures(admin);
    query = await startQueryServer({ statementTimeoutMs: 1234 });
  });

  afterAll(async () => {
    await query?.stop();
    await admin.end();
  });

  /** A client with no service credential (or the one given). */
  function clientWithout(serviceToken?: string) {
    const transport = createConnectTransport({
      baseUrl: query.baseUrl,
      httpVersion: "2",
      interceptors:
        serviceToken === undefined
          ? []
          : [
              (next) => (request) => {
                request.header.set("authorization", `Bearer ${serviceToken}`);
                return next(request);
              },
            ],
    });
    return { subscriptions: createClient(SubscriptionService, transport), health: createClient(Health, transport) };
  }

  it.each([
    ["no service credential", undefined],
    ["a wrong service credential", "x".repeat(48)],
  ])("answers UNAUTHENTICATED to a call with %s", async (_, token) => {
    const error = await rpcError(clientWithout(token).subscriptions.listSubscriptions({ merchantId: "mer_x" }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(errorDetailOf(error)?.reason).toBe(ErrorReason.SERVICE_CREDENTIAL_INVALID);
  });

  it("answers grpc.health.v1 Check with SERVING without the credential, for the process and each service", async () => {
    const { health } = clientWithout();
    for (const service of ["", "subdata.subscription.v1.SubscriptionService", "subdata.order.v1.OrderService"]) {
      expect((await health.check({ service })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    }
  });

  it("runs its sessions with the configured statement_timeout, read-only, in UTC, with generic plans", async () => {
    const result = await query.pool.query(
      "SELECT current_setting('statement_timeout') AS timeout, current_setting('default_transaction_read_only') AS read_only, current_setting('TimeZone') AS zone, current_setting('plan_cache_mode') AS plans, current_user AS role",
    );
    expect(result.rows[0]).toEqual({ timeout: "1234ms", read_only: "on", zone: "UTC", plans: "force_generic_plan", role: "subdata_query" });
  });

  it("answers DEADLINE_EXCEEDED when a query outlives the statement timeout", async () => {
    const slow = await startQueryServer({ statementTimeoutMs: 50 });
    const merchantId = await fixtures.merchant();
    const subscription = await fixtures.subscription({ merchantId });
    // Hold a lock the read must wait for (only as long as this one call takes), so the timeout fires.
    const locker = await admin.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE charges IN ACCESS EXCLUSIVE MODE");
      const error = await rpcError(slow.subscriptions.getSubscription({ merchantId, subscriptionId: subscription.id }));
      expect(error.code).toBe(Code.DeadlineExceeded);
    } finally {
      await locker.query("ROLLBACK");
      locker.release();
      await slow.stop();
    }
  });

  it("knows every label of the database enums it maps", async () => {
    for (const [type, labels] of Object.entries(databaseEnumLabels)) {
      const result = await admin.query(`SELECT unnest(enum_range(NULL::${type}))::text AS label`);
      expect(result.rows.map((row) => row.label)).toEqual(labels);
    }
  });

  describe("its SQL", () => {
    const statements = [
      ["subscriptions, first page", subscriptionStatements.list.all.first, ["mer_x", 51], "subscriptions_merchant_keyset", []],
      [
        "subscriptions, next page",
        subscriptionStatements.list.all.after,
        ["mer_x", "2026-01-01 00:00:00.000001+00", "sub_x", 51],
        "subscriptions_merchant_keyset",
        [],
      ],
      [
        "subscriptions by status, first page",
        subscriptionStatements.list.status.first,
        ["mer_x", "ACTIVE", 51],
        "subscriptions_merchant_status_keyset",
        ["subscriptions_merchant_keyset"],
      ],
      [
        "subscriptions by status, next page",
        subscriptionStatements.list.status.after,
        ["mer_x", "ACTIVE", "2026-01-01 00:00:00+00", "sub_x", 51],
        "subscriptions_merchant_status_keyset",
        ["subscriptions_merchant_keyset"],
      ],
      ["orders, first page", orderStatements.list.all.first, ["mer_x", 51], "orders_merchant_keyset", []],
      [
        "orders by subscription, first page",
        orderStatements.list.subscription.first,
        ["mer_x", "sub_x", 51],
        "orders_merchant_subscription_keyset",
        ["orders_merchant_keyset"],
      ],
      ["orders, next page", orderStatements.list.all.after, ["mer_x", "2026-01-01 00:00:00+00", "ord_x", 51], "orders_merchant_keyset", []],
      [
        "orders by subscription, next page",
        orderStatements.list.subscription.after,
        ["mer_x", "sub_x", "2026-01-01 00:00:00+00", "ord_x", 51],
        "orders_merchant_subscription_keyset",
        ["orders_merchant_keyset"],
      ],
      ["one subscription with its charges", subscriptionStatements.getWithCharges, ["mer_x", "sub_x"], "subscriptions_merchant_id_id", []],
    ] as const;

    // The test database is tiny, so the planner may prefer a sequential scan; with scans and sorts
    // priced out, the plan shows whether the keyset condition can be answered by the intended index.
    // A filtered walk could also be served, without a sort, by the merchant-wide keyset index plus a
    // filter; on a tiny table the two cost the same and the planner's pick is arbitrary. Hiding the
    // wider index (DROP INDEX inside the rolled-back transaction) asks the question that matters: can
    // the intended index answer it alone?
    it.each(statements)("reads %s through its index (keyset or primary key), without a sort", async (_, statement, values, index, hidden) => {
      const client = await admin.connect();
      try {
        await client.query("BEGIN");
        await client.query("SET LOCAL lock_timeout = '10s'");
        for (const name of hidden) await client.query(`DROP INDEX ${client.escapeIdentifier(name)}`);
        await client.query("SET LOCAL enable_seqscan = off");
        await client.query("SET LOCAL enable_sort = off");
        await client.query("SET LOCAL enable_bitmapscan = off");
        await client.query(`PREPARE explained AS ${statement.text}`);
        const params = values.map((value) => (typeof value === "number" ? String(value) : `'${value}'`)).join(", ");
        // Custom (planned for these values) and generic (planned once, as the service's pool runs
        // them: plan_cache_mode=force_generic_plan, services/query/src/pool.ts): the same index.
        for (const mode of ["force_custom_plan", "force_generic_plan"]) {
          await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
          const plan = (await client.query(`EXPLAIN (FORMAT JSON) EXECUTE explained(${params})`)).rows[0]["QUERY PLAN"][0].Plan;
          const outer = plan.Plans[0];
          expect(outer["Index Name"] ?? findIndexScan(outer)?.["Index Name"]).toBe(index);
          expect(JSON.stringify(plan)).not.toContain('"Node Type":"Sort"');
          if (statement.name.endsWith("_after")) expect(JSON.stringify(findIndexScan(outer))).toContain("created_at");
          // A generic plan shows the parameters themselves where a custom one shows the values.
          expect(JSON.stringify(findIndexScan(outer))).toContain(mode === "force_generic_plan" ? "$1" : "'mer_x'");
        }
      } finally {
        await client.query("ROLLBACK");
        // Prepared statements outlive transactions.
        await client.query("DEALLOCATE ALL");
        client.release();
      }
    });
  });
});

/** The first index scan of a plan tree (the driving one: plans list the outer side first). */
function findIndexScan(node: Record<string, unknown>): Record<string, unknown> | undefined {
  if (typeof node["Index Name"] === "string") return node;
  for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) {
    const found = findIndexScan(child);
    if (found) return found;
  }
  return undefined;
}
