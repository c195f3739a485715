import { Code, ConnectError, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { limitConcurrency } from "./upstream-limit.ts";

/** A call whose completion the test controls. */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function harness(maxInFlight: number, onAdmitted?: (waitSeconds: number) => void, maxWaiting?: number) {
  const started: string[] = [];
  const pending = new Map<string, ReturnType<typeof deferred>>();
  const next = async (request: UnaryRequest): Promise<UnaryResponse> => {
    const name = request.header.get("name")!;
    started.push(name);
    const call = deferred();
    pending.set(name, call);
    await call.promise;
    return { message: name } as unknown as UnaryResponse;
  };
  const call = limitConcurrency(maxInFlight, onAdmitted, maxWaiting)(next as never) as (request: UnaryRequest) => Promise<UnaryResponse>;
  const request = (name: string, signal = new AbortController().signal) => call({ header: new Headers({ name }), signal } as unknown as UnaryRequest);
  return { started, pending, request };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("limitConcurrency", () => {
  it("admits up to the bound and then one waiting call per finished call, in arrival order", async () => {
    const { started, pending, request } = harness(2);
    const settled = Promise.allSettled(["a", "b", "c", "d"].map((name) => request(name)));
    await turn();
    expect(started).toEqual(["a", "b"]);
    pending.get("b")!.resolve();
    await turn();
    expect(started).toEqual(["a", "b", "c"]);
    pending.get("a")!.reject(new ConnectError("boom", Code.Internal));
    await turn();
    expect(started).toEqual(["a", "b", "c", "d"]);
    pending.get("c")!.resolve();
    pending.get("d")!.resolve();
    const results = await settled;
    expect(results.map((result) => result.status)).toEqual(["rejected", "fulfilled", "fulfilled", "fulfilled"]);
  });

  it("reports each admitted call's wait for its slot: zero when one was free", async () => {
    const waits: number[] = [];
    const { pending, request } = harness(1, (seconds) => waits.push(seconds));
    const settled = Promise.allSettled(["a", "b"].map((name) => request(name)));
    await turn();
    expect(waits).toEqual([0]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    pending.get("a")!.resolve();
    await turn();
    expect(waits).toHaveLength(2);
    // b waited while a ran (at least the 20 ms timer, give or take the timer's rounding).
    expect(waits[1]).toBeGreaterThan(0.01);
    pending.get("b")!.resolve();
    await settled;
  });

  it("gives up a waiting call when its signal aborts, without starting it or losing its slot", async () => {
    const { started, pending, request } = harness(1);
    const first = request("a");
    const deadline = new AbortController();
    const waiting = request("b", deadline.signal);
    const third = request("c");
    await turn();
    deadline.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    await expect(waiting).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    pending.get("a")!.resolve();
    await turn();
    expect(started).toEqual(["a", "c"]);
    pending.get("c")!.resolve();
    await Promise.all([first, third]);
    // The bound still holds: one at a time.
    const fourth = request("d");
    const fifth = request("e");
    await turn();
    expect(started).toEqual(["a", "c", "d"]);
    pending.get("d")!.resolve();
    await turn();
    pending.get("e")!.resolve();
    await Promise.all([fourth, fifth]);
  });

  it("refuses a call at once with RESOURCE_EXHAUSTED when maxWaiting calls already wait, and queues again once one was admitted", async () => {
    const { started, pending, request } = harness(1, undefined, 2);
    const admitted = [request("a"), request("b"), request("c")];
    await turn();
    // "a" runs, "b" and "c" fill the queue: "d" never reaches the upstream.
    await expect(request("d")).rejects.toSatisfy((error) => ConnectError.from(error).code === Code.ResourceExhausted);
    expect(started).toEqual(["a"]);
    pending.get("a")!.resolve();
    await turn();
    // "b" took the slot, so there is room in the queue again.
    const e = request("e");
    await turn();
    for (const name of ["b", "c", "e"]) {
      pending.get(name)?.resolve();
      await turn();
    }
    await Promise.all([...admitted, e]);
    expect(started).toEqual(["a", "b", "c", "e"]);
  });

  it("refuses a bound that is not a positive integer", () => {
    expect(() => limitConcurrency(0)).toThrow();
  });
});
