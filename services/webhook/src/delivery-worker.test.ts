import { describe, expect, it } from "vitest";
import type { AttemptResult } from "./deliver-webhook.ts";
import { decide } from "./delivery-worker.ts";

const attempt = (status: number | null, errorClass: AttemptResult["errorClass"], retryAfterMs?: number): AttemptResult => ({
  startedAt: new Date(),
  latencyMicros: 1000n,
  status,
  errorClass,
  responseBody: "",
  retryAfterMs,
  errorMessage: undefined,
});

describe("decide", () => {
  const schedule = [0, 5_000, 60_000];
  const mid = () => 0.5;

  it("a 2xx succeeds", () => {
    expect(decide(attempt(204, "NONE"), 1, schedule)).toEqual({ kind: "succeeded" });
  });

  it("410 means gone, even on the last attempt", () => {
    expect(decide(attempt(410, "HTTP_STATUS"), 3, schedule)).toEqual({ kind: "gone" });
  });

  it("other failures follow the schedule, then fail for good", () => {
    expect(decide(attempt(500, "HTTP_STATUS"), 1, schedule, mid)).toEqual({ kind: "retry", delayMs: 5_000 });
    expect(decide(attempt(null, "TIMEOUT"), 2, schedule, mid)).toEqual({ kind: "retry", delayMs: 60_000 });
    expect(decide(attempt(302, "HTTP_STATUS"), 3, schedule, mid)).toEqual({ kind: "failed" });
  });

  it("Retry-After pushes the retry out", () => {
    expect(decide(attempt(429, "HTTP_STATUS", 30_000), 1, schedule, mid)).toEqual({ kind: "retry", delayMs: 30_000 });
  });
});
