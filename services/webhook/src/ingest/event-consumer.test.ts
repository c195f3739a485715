import { describe, expect, it } from "vitest";
import { subjectsWithin } from "./event-consumer.ts";

describe("subjectsWithin (which resources a durable's earlier filter already took)", () => {
  it("knows the subscription-only filter took subscription events and nothing else", () => {
    expect(subjectsWithin("p.events.subscription.>", "p.events.subscription.>")).toBe(true);
    expect(subjectsWithin("p.events.charge.>", "p.events.subscription.>")).toBe(false);
    expect(subjectsWithin("p.events.order.>", "p.events.subscription.>")).toBe(false);
  });

  it("counts a filter over the whole prefix, or none at all, as having taken every resource", () => {
    for (const filter of ["p.events.>", "p.>", ">", ""]) expect(subjectsWithin("p.events.charge.>", filter)).toBe(true);
    expect(subjectsWithin("p.events.charge.>", "p.events.*.>")).toBe(true);
  });

  it("does not count a narrower or unrelated filter", () => {
    expect(subjectsWithin("p.events.charge.>", "p.events.charge.mer_1")).toBe(false);
    expect(subjectsWithin("p.events.charge.>", "q.events.>")).toBe(false);
    expect(subjectsWithin("p.events.charge.>", "p.events")).toBe(false);
  });
});
