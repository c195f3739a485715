import { timestampMs } from "@bufbuild/protobuf/wkt";
import { create } from "@bufbuild/protobuf";
import { RecordThrottledAuthenticationsRequestSchema, RecordThrottledAuthenticationsResponseSchema } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { describe, expect, it } from "vitest";
import { createThrottledAuthentications } from "./throttled-authentications.ts";

/** The counts each call carried, as [address, window start ms, attempts]. */
function recorder(options: { fail?: () => boolean; maxAddresses?: number } = {}) {
  const calls: Array<Array<[string, number, number]>> = [];
  const warnings: Array<Record<string, unknown>> = [];
  let nowMs = 1_000_000;
  const throttled = createThrottledAuthentications({
    apiKeys: {
      recordThrottledAuthentications: async (init) => {
        if (options.fail?.()) throw new Error("auth is down");
        const request = create(RecordThrottledAuthenticationsRequestSchema, init);
        calls.push(request.throttled.map((count) => [count.clientIp, timestampMs(count.windowStart!), Number(count.attempts)]));
        return create(RecordThrottledAuthenticationsResponseSchema, {});
      },
    },
    windowSeconds: 60,
    maxAddresses: options.maxAddresses ?? 100,
    timeoutMs: 1000,
    logger: { warn: (fields: object) => void warnings.push(fields as Record<string, unknown>) },
    now: () => nowMs,
  });
  const at = (ms: number) => {
    nowMs = ms;
  };
  return { throttled, calls, warnings, at };
}

describe("throttled authentication counts", () => {
  it("aggregates per address and window, and sends each pair once", async () => {
    const { throttled, calls, at } = recorder();
    at(60_000);
    throttled.count("10.0.0.1");
    throttled.count("10.0.0.1");
    throttled.count("10.0.0.2");
    at(119_999);
    throttled.count("10.0.0.1");
    at(120_000);
    throttled.count("10.0.0.1");
    await throttled.flush();
    await throttled.flush();
    expect(calls).toEqual([
      [
        ["10.0.0.1", 60_000, 3],
        ["10.0.0.2", 60_000, 1],
        ["10.0.0.1", 120_000, 1],
      ],
    ]);
  });

  it("keeps the counts of a failed flush for the next one", async () => {
    let down = true;
    const { throttled, calls, warnings } = recorder({ fail: () => down });
    throttled.count("10.0.0.1");
    await throttled.flush();
    expect(calls).toEqual([]);
    expect(warnings).toEqual([expect.objectContaining({ pairs: 1 })]);
    throttled.count("10.0.0.1");
    down = false;
    await throttled.flush();
    expect(calls).toEqual([[["10.0.0.1", 960_000, 2]]]);
  });

  it("holds at most maxAddresses pairs and reports what it could not count", async () => {
    const { throttled, calls, warnings } = recorder({ maxAddresses: 2 });
    for (const address of ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.3", "10.0.0.1"]) throttled.count(address);
    await throttled.flush();
    expect(calls).toEqual([
      [
        ["10.0.0.1", 960_000, 2],
        ["10.0.0.2", 960_000, 1],
      ],
    ]);
    expect(warnings).toEqual([{ uncounted: 2 }]);
  });

  it("sends at most 1000 pairs per call", async () => {
    const { throttled, calls } = recorder({ maxAddresses: 2500 });
    for (let i = 0; i < 2500; i++) throttled.count(`10.0.${Math.floor(i / 256)}.${i % 256}`);
    await throttled.flush();
    expect(calls.map((call) => call.length)).toEqual([1000, 1000, 500]);
  });
});
