import { describe, expect, it } from "vitest";
import { createWaitingReads } from "./waiting-reads.ts";

describe("waiting reads", () => {
  it("refuses a key's wait beyond its share, and admits it again once one is released", () => {
    const reads = createWaitingReads({ maxTotal: 10, maxPerKey: 2 });
    const first = reads.admit("key_a");
    const second = reads.admit("key_a");
    expect(reads.admit("key_a")).toBe("key_full");
    expect(typeof reads.admit("key_b")).toBe("object");
    if (typeof first !== "object") throw new Error("first wait was refused");
    first.release();
    first.release();
    expect(typeof reads.admit("key_a")).toBe("object");
    expect(reads.admit("key_a")).toBe("key_full");
    expect(typeof second).toBe("object");
  });

  it("refuses every key once the gateway's bound is reached", () => {
    const reads = createWaitingReads({ maxTotal: 3, maxPerKey: 2 });
    reads.admit("a");
    reads.admit("b");
    const third = reads.admit("c");
    expect(reads.admit("d")).toBe("gateway_full");
    expect(reads.waiting).toBe(3);
    if (typeof third !== "object") throw new Error("third wait was refused");
    third.release();
    expect(reads.waiting).toBe(2);
    expect(typeof reads.admit("d")).toBe("object");
  });

  it("aborts every admitted wait on drain and admits none after it", () => {
    const reads = createWaitingReads({ maxTotal: 3, maxPerKey: 3 });
    const slot = reads.admit("a");
    if (typeof slot !== "object") throw new Error("wait was refused");
    expect(slot.signal.aborted).toBe(false);
    reads.drain();
    expect(slot.signal.aborted).toBe(true);
    expect(reads.admit("b")).toBe("gateway_full");
  });
});
