import { describe, expect, it } from "vitest";
import { parseWrkOutput, pauseForRate, wrkPacingScript } from "./load-generator.ts";

const WRK_OUTPUT = `Running 10s test @ http://127.0.0.1:39001/api/v1/subscriptions?status=ACTIVE&limit=50
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    12.31ms    8.02ms 120.50ms   80.00%
    Req/Sec   301.20     40.10   400.00     70.00%
  Latency Distribution
     50%   10.40ms
     75%   14.00ms
     90%   20.10ms
     99%    1.02s
  3012 requests in 10.01s, 90.12MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 5
Requests/sec:    300.90
Transfer/sec:      9.00MB
`;

describe("parseWrkOutput", () => {
  it("reads counts, rates and percentiles in wrk's units", () => {
    expect(parseWrkOutput(WRK_OUTPUT)).toEqual({
      requests: 3012,
      seconds: 10.01,
      requestsPerSecond: 300.9,
      p50Ms: 10.4,
      p99Ms: 1020,
      non2xx: 5,
      errors: 3,
    });
  });
});

describe("pacing", () => {
  it("spreads the offered rate over the connections", () => {
    expect(pauseForRate(64, 320).meanPauseMs).toBe(200);
    expect(pauseForRate(8, 1000).meanPauseMs).toBe(8);
  });

  it("refuses a rate that cannot be offered", () => {
    expect(() => pauseForRate(64, 0)).toThrow(/positive rate/);
    expect(() => pauseForRate(64, Number.NaN)).toThrow(/positive rate/);
  });

  it("gives wrk a delay() hook with exponential pauses of the mean", () => {
    const script = wrkPacingScript({ meanPauseMs: 123.4567 });
    expect(script).toContain("local mean_ms = 123.457");
    expect(script).toMatch(/function delay\(\)\n\s+return math\.floor\(-mean_ms \* math\.log\(1 - math\.random\(\)\)\)\nend/);
  });
});
