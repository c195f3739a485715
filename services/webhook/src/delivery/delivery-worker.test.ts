import { createLogger, type Pool } from "@subdata/runtime";
import { createCapturedSpans } from "@subdata/runtime/test-support";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AttemptResult } from "./deliver-webhook.ts";
import type { ClaimedDelivery, ClaimResult } from "./claim-repository.ts";
import { createDeliveryWorker, decide } from "./delivery-worker.ts";

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

const logger = createLogger({ name: "delivery-worker-test", level: "silent" });
const POLL = 1_000;
const nothingDue: ClaimResult = { claimed: [], deferred: 0, scanned: 0 };

/** Every statement succeeds with no rows: as far as the worker can tell, each recorder flush commits. */
const committingPool = { connect: async () => ({ query: async () => ({ rows: [] }), release() {} }) } as unknown as Pool;

const claimed = (endpointId: string, n: number): ClaimedDelivery => ({
  id: `wd_${endpointId}_${n}`,
  merchantId: "mer_test",
  endpointId,
  eventId: `evt_${endpointId}_${n}`,
  resourceId: `sub_${endpointId}_${n}`,
  version: 1n,
  attemptNumber: 1,
  url: "https://receiver.example/hook",
  body: "{}",
  traceparent: null,
  secretCiphertext: Buffer.from("sealed"),
  previousSecretCiphertext: null,
  endpointFailing: false,
});

/**
 * A worker whose claims are answered from `answers` (then: nothing due) and recorded as the endpoint
 * ids each one skipped; its POSTs return only when the test calls `respond(eventId)`. Fake timers: the
 * poll fires only when a test moves the clock.
 */
function holdHarness(answers: Array<ClaimResult | Promise<ClaimResult>>, pool: Pool = committingPool) {
  const claims: string[][] = [];
  const posts = new Map<string, { answer: () => void; fail: (error: Error) => void }>();
  let recorded = 0;
  const worker = createDeliveryWorker({
    pool,
    secretBox: { seal: () => Buffer.alloc(0), open: () => "whsec_test" },
    sender: {
      send: (message) => new Promise((resolve, reject) => posts.set(message.eventId, { answer: () => resolve(attempt(200, "NONE")), fail: reject })),
    },
    logger,
    concurrency: 8,
    // Full at 3 or 4 in flight (claimed for again once half of the cap is free).
    perEndpointConcurrency: 4,
    failingEndpointConcurrency: 1,
    perMerchantConcurrency: 8,
    leaseMs: 60_000,
    pollIntervalMs: POLL,
    retrySchedule: [0],
    disableAfterMs: 86_400_000,
    disableReason: "test",
    claims: {
      claimDue: async (options) => {
        claims.push([...options.fullEndpointIds]);
        return answers.shift() ?? nothingDue;
      },
    },
    onAttempt: () => void recorded++,
    tracing: createCapturedSpans().tracing,
  });
  return {
    worker,
    claims,
    recorded: () => recorded,
    respond(eventId: string) {
      posts.get(eventId)?.answer();
      posts.delete(eventId);
    },
    /** The sender throws instead of answering: no attempt reaches the recorder. */
    fail(eventId: string) {
      posts.get(eventId)?.fail(new Error("sender broke"));
      posts.delete(eventId);
    },
    async stop() {
      for (const post of posts.values()) post.answer();
      await worker.stop();
    },
  };
}

/** Lets every pending promise chain run (setImmediate is left real). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe("the hold after an empty claim past a full endpoint", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** we_busy gets its whole cap (4), we_other one delivery; then a wake-up's claim skips we_busy and finds nothing. */
  async function saturated(secondAnswer: ClaimResult | Promise<ClaimResult> = nothingDue) {
    const busy = [1, 2, 3, 4].map((n) => claimed("we_busy", n));
    const h = holdHarness([{ claimed: [...busy, claimed("we_other", 1)], deferred: 0, scanned: 5 }, secondAnswer]);
    h.worker.start();
    await settle();
    h.worker.wake();
    await settle();
    return h;
  }

  it("a recorded attempt of the full endpoint, still full, does not claim again", async () => {
    const h = await saturated();
    expect(h.claims).toEqual([[], ["we_busy"]]);
    h.respond("evt_we_busy_1");
    await settle();
    expect(h.recorded()).toBe(1);
    expect(h.claims).toHaveLength(2);
    await h.stop();
  });

  it("a wake-up ends it", async () => {
    const h = await saturated();
    h.respond("evt_we_busy_1");
    await settle();
    h.worker.wake();
    await settle();
    expect(h.claims).toEqual([[], ["we_busy"], ["we_busy"]]);
    await h.stop();
  });

  it("a wake-up for new rows of the held endpoint only does not end it; one naming another endpoint does", async () => {
    const h = await saturated();
    h.respond("evt_we_busy_1");
    await settle();
    h.worker.wake(["we_busy"]);
    await settle();
    expect(h.claims).toEqual([[], ["we_busy"]]);
    h.worker.wake(["we_busy", "we_new"]);
    await settle();
    expect(h.claims).toEqual([[], ["we_busy"], ["we_busy"]]);
    await h.stop();
  });

  it("is set by a claim during which only a wake-up for the held endpoint arrived", async () => {
    let answer!: (result: ClaimResult) => void;
    const h = await saturated(new Promise<ClaimResult>((resolve) => (answer = resolve)));
    h.worker.wake(["we_busy"]);
    answer(nothingDue);
    await settle();
    // The wake-up named only the endpoint the claim skipped: nothing it announced could have been missed.
    expect(h.claims).toEqual([[], ["we_busy"]]);
    await h.stop();
  });

  it("a recorded attempt of another endpoint ends it", async () => {
    const h = await saturated();
    h.respond("evt_we_other_1");
    await settle();
    expect(h.recorded()).toBe(1);
    expect(h.claims).toEqual([[], ["we_busy"], ["we_busy"]]);
    await h.stop();
  });

  it("ends pollIntervalMs after the empty claim, however many claims it held back, then polls without spinning", async () => {
    const h = await saturated();
    await vi.advanceTimersByTimeAsync(POLL / 2);
    h.respond("evt_we_busy_1");
    await settle();
    await vi.advanceTimersByTimeAsync(POLL / 2 - 1);
    expect(h.claims).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(h.claims).toHaveLength(3);
    // Each of these claims finds nothing again: one claim per poll.
    await vi.advanceTimersByTimeAsync(5 * POLL);
    await settle();
    expect(h.claims).toHaveLength(8);
    await h.stop();
  });

  it("is not set by a claim during which a wake-up arrived", async () => {
    let answer!: (result: ClaimResult) => void;
    const h = await saturated(new Promise<ClaimResult>((resolve) => (answer = resolve)));
    expect(h.claims).toHaveLength(2);
    h.worker.wake();
    answer(nothingDue);
    await settle();
    expect(h.claims).toEqual([[], ["we_busy"], ["we_busy"]]);
    await h.stop();
  });
});

describe("an endpoint's room", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("frees up when its attempts are recorded, not when its POSTs return: the claim counts unrecorded attempts in flight", async () => {
    let openRecorder!: () => void;
    const recorderOpen = new Promise<void>((resolve) => (openRecorder = resolve));
    const heldPool = {
      connect: async () => {
        await recorderOpen;
        return committingPool.connect();
      },
    } as unknown as Pool;
    const h = holdHarness([{ claimed: [1, 2, 3, 4].map((n) => claimed("we_busy", n)), deferred: 0, scanned: 4 }], heldPool);
    h.worker.start();
    await settle();
    expect(h.claims).toEqual([[]]);
    // Three of its four POSTs answered: half of its cap and more is free, but nothing is recorded yet.
    for (const n of [1, 2, 3]) h.respond(`evt_we_busy_${n}`);
    await settle();
    expect(h.claims).toEqual([[]]);
    openRecorder();
    await settle();
    expect(h.recorded()).toBe(3);
    // Then it is claimed for again (a claim after an earlier flush, with one recorded, still skipped it).
    expect(h.claims.at(-1)).toEqual([]);
    await h.stop();
  });

  it("frees up when its sender throws, though no attempt reaches the recorder", async () => {
    const h = holdHarness([{ claimed: [1, 2, 3, 4].map((n) => claimed("we_busy", n)), deferred: 0, scanned: 4 }]);
    h.worker.start();
    await settle();
    expect(h.claims).toEqual([[]]);
    for (const n of [1, 2, 3]) h.fail(`evt_we_busy_${n}`);
    await settle();
    expect(h.recorded()).toBe(0);
    // Three of four settled: claimed for again, no longer counted full by this replica.
    expect(h.claims).toEqual([[], []]);
    await h.stop();
  });
});
