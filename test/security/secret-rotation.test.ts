import { randomBytes } from "node:crypto";
import { Code, createClient } from "@connectrpc/connect";
import { ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";
import { SubscriptionService } from "@subdata/proto/subdata/subscription/v1/subscription_service_pb";
import { createCommitWatchPool } from "@subdata/events";
import { createChangeNotifier, createQueryServer } from "@subdata/query";
import { createLogger, createPool, createServiceTransport, errorDetailOf, type Pool, tokenSha256 } from "@subdata/runtime";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listeningPorts, type RunningProcess, startProcess } from "../lifecycle/support/process.ts";
import { createFixtures } from "../support/fixtures.ts";
import { rpcError } from "@subdata/runtime/test-support";

// The query service as production starts it (main.ts, environment only), half-way through a rotation:
// the gateway's token B and page-token secret B are the new values, the old ones (A) still accepted.
const tokenA = randomBytes(24).toString("hex");
const tokenB = randomBytes(24).toString("hex");
const tokenC = randomBytes(24).toString("hex");
const sha256Hex = (token: string) => tokenSha256(token).toString("hex");
const pageSecretA = randomBytes(32).toString("hex");
const pageSecretB = randomBytes(32).toString("hex");

const closers: Array<() => Promise<void> | void> = [];
let rotated: RunningProcess;
let rotatedUrl: string;
let pool: Pool;
let merchantId: string;

function subscriptionsClient(baseUrl: string, serviceToken: string) {
  const connection = createServiceTransport({ baseUrl, serviceToken });
  closers.push(() => connection.close());
  return createClient(SubscriptionService, connection.transport);
}

/** An in-process replica of the query service with the given secrets, on port 0. */
async function replica(secrets: { serviceToken: string; pageTokenSecret: string }) {
  const logger = createLogger({ name: "query", level: "silent" });
  const watchPool = createCommitWatchPool({ connectionString: inject("roleDatabaseUrls").query, applicationName: "subdata-query-changes", logger });
  const changes = createChangeNotifier({ db: watchPool, logger, maxWaiters: 10, pollIntervalMs: 10 });
  const server = createQueryServer({
    pool,
    changes,
    logger,
    pageTokenSecret: secrets.pageTokenSecret,
    callers: { gateway: [tokenSha256(secrets.serviceToken)] },
  });
  const address = await server.listen("127.0.0.1", 0);
  // Run in reverse: the long polls first, the watch's pool last.
  closers.push(
    () => watchPool.end(),
    () => server.close(),
    () => changes.close(),
  );
  return subscriptionsClient(`http://127.0.0.1:${address.port}`, secrets.serviceToken);
}

beforeAll(async () => {
  const admin = new pg.Pool({ connectionString: inject("adminDatabaseUrl"), max: 2 });
  try {
    const fixtures = createFixtures(admin);
    merchantId = await fixtures.merchant();
    for (let i = 0; i < 3; i++) await fixtures.subscription({ merchantId });
  } finally {
    await admin.end();
  }
  pool = createPool({ connectionString: inject("roleDatabaseUrls").query, applicationName: "subdata-rotation-test", readOnly: true });
  rotated = startProcess("query", "services/query/src/main.ts", {
    LOG_LEVEL: "info",
    DATABASE_URL: inject("roleDatabaseUrls").query,
    // The server holds only the tokens' hashes; the gateway sends B (or, not yet restarted, A).
    SUBDATA_GATEWAY_TOKEN_SHA256: `${sha256Hex(tokenB)},${sha256Hex(tokenA)}`,
    SUBDATA_PAGE_TOKEN_SECRET: pageSecretB,
    SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: pageSecretA,
  });
  rotatedUrl = `http://127.0.0.1:${(await listeningPorts(rotated)).port}`;
});

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await rotated?.stop();
  await pool?.end();
});

describe("rotating the gateway's token and the page-token secret without downtime", () => {
  it("a service accepting the hashes of B and A answers a gateway sending A and one sending B, and refuses C", async () => {
    for (const token of [tokenA, tokenB]) {
      const page = await subscriptionsClient(rotatedUrl, token).listSubscriptions({ merchantId, pageSize: 10 });
      expect(page.subscriptions).toHaveLength(3);
    }
    const error = await rpcError(subscriptionsClient(rotatedUrl, tokenC).listSubscriptions({ merchantId, pageSize: 10 }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(errorDetailOf(error)?.reason).toBe(ErrorReason.SERVICE_CREDENTIAL_INVALID);
  });

  it("continues a walk begun on a replica that still signs with A, and signs its own cursors with B", async () => {
    const before = await replica({ serviceToken: tokenA, pageTokenSecret: pageSecretA });
    const afterRotation = await replica({ serviceToken: tokenB, pageTokenSecret: pageSecretB });
    const rotatedClient = subscriptionsClient(rotatedUrl, tokenB);

    const first = await before.listSubscriptions({ merchantId, pageSize: 1 });
    const second = await rotatedClient.listSubscriptions({ merchantId, pageSize: 1, pageToken: first.nextPageToken });
    expect(second.subscriptions[0]!.id).not.toBe(first.subscriptions[0]!.id);
    // Signed with B: a replica that knows only B (after the old secret is dropped) continues it.
    const third = await afterRotation.listSubscriptions({ merchantId, pageSize: 1, pageToken: second.nextPageToken });
    expect(new Set([first, second, third].map((page) => page.subscriptions[0]!.id)).size).toBe(3);
  });

  it("refuses cursors signed with neither B nor A, and A's cursors once A is dropped", async () => {
    const stranger = await replica({ serviceToken: tokenC, pageTokenSecret: randomBytes(32).toString("hex") });
    const before = await replica({ serviceToken: tokenA, pageTokenSecret: pageSecretA });
    const afterRotation = await replica({ serviceToken: tokenB, pageTokenSecret: pageSecretB });
    const strangerCursor = (await stranger.listSubscriptions({ merchantId, pageSize: 1 })).nextPageToken;
    const cursorA = (await before.listSubscriptions({ merchantId, pageSize: 1 })).nextPageToken;

    for (const [client, cursor] of [
      [subscriptionsClient(rotatedUrl, tokenB), strangerCursor],
      [afterRotation, cursorA],
    ] as const) {
      const error = await rpcError(client.listSubscriptions({ merchantId, pageSize: 1, pageToken: cursor }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(errorDetailOf(error)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
    }
  });

  it("refuses to start when an accepted hash is malformed, naming the variable and not the value", async () => {
    const bad = startProcess("query-bad-config", "services/query/src/main.ts", {
      DATABASE_URL: inject("roleDatabaseUrls").query,
      SUBDATA_GATEWAY_TOKEN_SHA256: `${sha256Hex(tokenA)},tooshort`,
      SUBDATA_PAGE_TOKEN_SECRET: pageSecretB,
    });
    const exit = await bad.exited;
    expect(exit.code).toBe(1);
    expect(bad.output()).toContain("SUBDATA_GATEWAY_TOKEN_SHA256 is invalid: item 2 of 2 must be 64 lowercase hex digits");
    expect(bad.output()).not.toContain("tooshort");
    expect(bad.output()).not.toContain(sha256Hex(tokenA));
  });
});
