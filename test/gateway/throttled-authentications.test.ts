import { randomInt } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { rpcError } from "@subdata/runtime/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "./gateway-harness.ts";

// Attempts the failed-authentication limit answers 429 never reach the auth service; they reach its
// security log as one row per client address and window, with the number of attempts.
const WINDOW_SECONDS = 3600;
let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayHarness({ SUBDATA_AUTH_FAILURE_QUOTA: "2", SUBDATA_AUTH_FAILURE_WINDOW_SECONDS: String(WINDOW_SECONDS), SUBDATA_TRUST_PROXY: "true" });
});

afterAll(() => h?.close());

/** A client address of its own, so no other test's attempts share its rows. */
const freshAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

async function attempts(clientIp: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    statuses.push((await h.request("sds_not_a_real_key", "/subscriptions?merchant_id=mer_x", { headers: { "x-forwarded-for": clientIp } })).statusCode);
  }
  return statuses;
}

async function throttledRows(clientIp: string) {
  const { rows } = await h.admin.query<{ occurred_at: Date; attempts: number; user_agent: string; request_id: string }>(
    "SELECT occurred_at, attempts, user_agent, request_id FROM security_events WHERE reason = 'throttled' AND client_ip = $1",
    [clientIp],
  );
  return rows;
}

describe("throttled authentication attempts in the security log", () => {
  it("are written as one row per address and window, counting every 429, and later flushes add to it", async () => {
    const clientIp = freshAddress();
    const statuses = await attempts(clientIp, 9);
    expect(statuses).toEqual([401, 401, 429, 429, 429, 429, 429, 429, 429]);
    await h.throttled.flush();
    const windowStart = Math.floor(Date.now() / (WINDOW_SECONDS * 1000)) * WINDOW_SECONDS * 1000;
    expect(await throttledRows(clientIp)).toEqual([{ occurred_at: new Date(windowStart), attempts: 7, user_agent: "", request_id: "" }]);

    expect(await attempts(clientIp, 3)).toEqual([429, 429, 429]);
    await h.throttled.flush();
    expect((await throttledRows(clientIp)).map((row) => row.attempts)).toEqual([10]);
    // The failed attempts before the limit are in the log one by one, as always.
    const { rows } = await h.admin.query("SELECT count(*)::int AS n FROM security_events WHERE reason <> 'throttled' AND client_ip = $1", [clientIp]);
    expect(rows).toEqual([{ n: 2 }]);
  });

  it("keeps addresses apart, and a flush with nothing counted writes nothing", async () => {
    const [first, second] = [freshAddress(), freshAddress()];
    await attempts(first, 4);
    await attempts(second, 5);
    await h.throttled.flush();
    await h.throttled.flush();
    expect((await throttledRows(first)).map((row) => row.attempts)).toEqual([2]);
    expect((await throttledRows(second)).map((row) => row.attempts)).toEqual([3]);
  });

  it("adds up counts repeated within one call, and refuses invalid counts", async () => {
    const clientIp = freshAddress();
    const windowStart = { seconds: 1_800_000_000n, nanos: 0 };
    await h.auth.apiKeys.recordThrottledAuthentications({
      throttled: [
        { clientIp, windowStart, attempts: 2n },
        { clientIp, windowStart, attempts: 3n },
      ],
    });
    expect((await throttledRows(clientIp)).map((row) => row.attempts)).toEqual([5]);
    for (const throttled of [[], [{ clientIp, windowStart, attempts: 0n }], [{ clientIp, attempts: 1n }], [{ clientIp: "", windowStart, attempts: 1n }]]) {
      const error = await rpcError(h.auth.apiKeys.recordThrottledAuthentications({ throttled }));
      expect(
        error.code,
        JSON.stringify(throttled, (_, value) => (typeof value === "bigint" ? String(value) : value)),
      ).toBe(Code.InvalidArgument);
    }
  });
});
