import { afterEach, describe, expect, it, vi } from "vitest";
import { createGroupCommitWriter } from "./group-commit.ts";

/** A flush whose calls the test completes by hand, to control exactly when each batch commits. */
function controlledFlush() {
  const calls: Array<{ items: readonly number[]; succeed: () => void; fail: (error: Error) => void }> = [];
  const waiters: Array<() => void> = [];
  const flush = (items: readonly number[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ items: [...items], succeed: resolve, fail: reject });
      for (const wake of waiters.splice(0)) wake();
    });
  async function nextCall(index: number) {
    while (calls.length <= index) await new Promise<void>((resolve) => waiters.push(resolve));
    return calls[index]!;
  }
  return { flush, calls, nextCall };
}

type Settled = "pending" | "resolved" | Error;

function track(promise: Promise<void>) {
  const state: { value: Settled } = { value: "pending" };
  promise.then(
    () => (state.value = "resolved"),
    (error: Error) => (state.value = error),
  );
  return state;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("the group-commit writer", () => {
  it("flushes a lone write at once, with no timer", async () => {
    const flushed: number[][] = [];
    const writer = createGroupCommitWriter<number>({ flush: async (items) => void flushed.push([...items]), maxBatchSize: 10 });
    await writer.write(1);
    expect(flushed).toEqual([[1]]);
  });

  it("batches the writes that arrive while a flush runs into the next flush", async () => {
    const control = controlledFlush();
    const writer = createGroupCommitWriter<number>({ flush: control.flush, maxBatchSize: 500 });
    const first = track(writer.write(0));
    const firstCall = await control.nextCall(0);
    const rest = Array.from({ length: 199 }, (_, i) => track(writer.write(i + 1)));
    await settle();
    // Nothing resolves before its batch commits.
    expect(first.value).toBe("pending");
    expect(control.calls).toHaveLength(1);
    firstCall.succeed();
    const secondCall = await control.nextCall(1);
    expect(secondCall.items).toEqual(Array.from({ length: 199 }, (_, i) => i + 1));
    await settle();
    expect(first.value).toBe("resolved");
    expect(rest.every((state) => state.value === "pending")).toBe(true);
    secondCall.succeed();
    await settle();
    expect(rest.every((state) => state.value === "resolved")).toBe(true);
    expect(writer.stats).toMatchObject({ flushes: 2, items: 200, largestBatch: 199 });
  });

  it("never puts more than maxBatchSize items in one flush, and loses nothing", async () => {
    const flushed: number[][] = [];
    const writer = createGroupCommitWriter<number>({
      flush: async (items) => {
        flushed.push([...items]);
        await settle();
      },
      maxBatchSize: 7,
    });
    await Promise.all(Array.from({ length: 100 }, (_, i) => writer.write(i)));
    expect(flushed.every((batch) => batch.length <= 7)).toBe(true);
    expect(flushed.flat()).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(flushed.length).toBeLessThan(100);
  });

  it("rejects exactly the callers of a failed flush, and the next batch still commits", async () => {
    const control = controlledFlush();
    const outcomes: Array<{ size: number; ok: boolean }> = [];
    const writer = createGroupCommitWriter<number>({ flush: control.flush, maxBatchSize: 500, onFlush: (o) => outcomes.push(o) });
    const a = track(writer.write(1));
    (await control.nextCall(0)).succeed();
    const b = [track(writer.write(2)), track(writer.write(3))];
    const failing = await control.nextCall(1);
    const c = [track(writer.write(4)), track(writer.write(5))];
    const boom = new Error("database down");
    failing.fail(boom);
    const recovering = await control.nextCall(2);
    expect(recovering.items).toEqual([4, 5]);
    recovering.succeed();
    await settle();
    expect(a.value).toBe("resolved");
    expect(b.map((s) => s.value)).toEqual([boom, boom]);
    expect(c.map((s) => s.value)).toEqual(["resolved", "resolved"]);
    expect(outcomes).toEqual([
      { size: 1, ok: true },
      { size: 2, ok: false },
      { size: 2, ok: true },
    ]);
    expect(writer.stats).toMatchObject({ flushes: 3, failedFlushes: 1, items: 3 });
  });

  it("flushes what is queued on close and refuses writes afterwards", async () => {
    const control = controlledFlush();
    const writer = createGroupCommitWriter<number>({
      flush: control.flush,
      maxBatchSize: 500,
      closedError: () => new Error("closed"),
    });
    const queued = [track(writer.write(1)), track(writer.write(2))];
    const closing = track(writer.close());
    await expect(writer.write(3)).rejects.toThrow("closed");
    (await control.nextCall(0)).succeed();
    await settle();
    expect(queued.map((s) => s.value)).toEqual(["resolved", "resolved"]);
    expect(closing.value).toBe("resolved");
    expect(control.calls.flatMap((call) => call.items)).toEqual([1, 2]);
  });

  it("keeps a writeAll in one flush, never splits it, and fits whole writes around it", async () => {
    const control = controlledFlush();
    const writer = createGroupCommitWriter<number>({ flush: control.flush, maxBatchSize: 4 });
    const first = track(writer.write(0));
    const firstCall = await control.nextCall(0);
    const group = track(writer.writeAll([1, 2, 3]));
    const oversized = track(writer.writeAll([10, 11, 12, 13, 14, 15]));
    const last = track(writer.write(4));
    firstCall.succeed();
    // [1, 2, 3] fits; the next whole write would not, so it waits. A write bigger than the bound goes alone.
    (await control.nextCall(1)).succeed();
    (await control.nextCall(2)).succeed();
    (await control.nextCall(3)).succeed();
    await settle();
    expect(control.calls.map((call) => call.items)).toEqual([[0], [1, 2, 3], [10, 11, 12, 13, 14, 15], [4]]);
    expect([first, group, oversized, last].map((state) => state.value)).toEqual(["resolved", "resolved", "resolved", "resolved"]);
    expect(writer.stats).toMatchObject({ items: 11, largestBatch: 6 });
  });

  it("rejects only the writers whose own items the flush refused", async () => {
    const refused = new Error("item 2 is invalid");
    const writer = createGroupCommitWriter<number>({
      flush: async (items) => items.map((item) => (item === 2 ? refused : undefined)),
      maxBatchSize: 10,
    });
    const states = [track(writer.write(1)), track(writer.write(2)), track(writer.writeAll([2, 3])), track(writer.writeAll([4, 5]))];
    await settle();
    await settle();
    expect(states.map((state) => state.value)).toEqual(["resolved", refused, refused, "resolved"]);
    expect(writer.stats).toMatchObject({ flushes: 1, failedFlushes: 0, items: 3 });
  });

  it("resolves an empty writeAll at once without a flush", async () => {
    const control = controlledFlush();
    const writer = createGroupCommitWriter<number>({ flush: control.flush, maxBatchSize: 4 });
    await writer.writeAll([]);
    expect(control.calls).toHaveLength(0);
  });
});

describe("the group-commit writer's bounds", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const overloadedError = (reason: string) => new Error(`overloaded: ${reason}`);

  it("refuses at once a write that would take the queue past maxQueued, and takes writes again once it drained", async () => {
    const control = controlledFlush();
    const writer = createGroupCommitWriter<number>({ flush: control.flush, maxBatchSize: 2, maxQueued: 3, overloadedError });
    const inFlight = track(writer.write(0));
    const firstCall = await control.nextCall(0);
    // The flush runs: three more fill the queue, the fourth is one too many.
    const queued = [1, 2, 3].map((item) => track(writer.write(item)));
    const refused = track(writer.write(4));
    await settle();
    expect(refused.value).toEqual(new Error("overloaded: queue_full"));
    expect(queued.every((state) => state.value === "pending")).toBe(true);
    expect(writer.stats.refusedFull).toBe(1);
    firstCall.succeed();
    (await control.nextCall(1)).succeed();
    (await control.nextCall(2)).succeed();
    await settle();
    expect(inFlight.value).toBe("resolved");
    expect(queued.every((state) => state.value === "resolved")).toBe(true);
    // The refused item was never flushed; the queue takes writes again.
    expect(control.calls.flatMap((call) => call.items)).toEqual([0, 1, 2, 3]);
    const again = track(writer.write(5));
    (await control.nextCall(3)).succeed();
    await settle();
    expect(again.value).toBe("resolved");
  });

  it("refuses a queued write at its deadline and never flushes it", async () => {
    vi.useFakeTimers();
    const control = controlledFlush();
    const writer = createGroupCommitWriter<number>({ flush: control.flush, maxBatchSize: 10, maxWaitMs: 2_000, overloadedError });
    const stuck = track(writer.write(0));
    await vi.advanceTimersByTimeAsync(0);
    const firstCall = control.calls[0]!;
    await vi.advanceTimersByTimeAsync(1_000);
    const late = track(writer.write(1));
    await vi.advanceTimersByTimeAsync(1_000);
    // The write in the running flush and the queued one each hit their own deadline.
    expect(stuck.value).toEqual(new Error("overloaded: deadline"));
    expect(late.value).toBe("pending");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(late.value).toEqual(new Error("overloaded: deadline"));
    expect(writer.stats.refusedDeadline).toBe(2);
    firstCall.succeed();
    await vi.advanceTimersByTimeAsync(0);
    // Only the write that was already in flight reached the sink; the one refused while queued did not.
    expect(control.calls.map((call) => call.items)).toEqual([[0]]);
    const next = track(writer.write(2));
    await vi.advanceTimersByTimeAsync(0);
    control.calls[1]!.succeed();
    await vi.advanceTimersByTimeAsync(0);
    expect(next.value).toBe("resolved");
    expect(control.calls.map((call) => call.items)).toEqual([[0], [2]]);
  });
});
