import { describe, expect, it } from "vitest";
import { resourceTypes } from "./change-events.ts";
import { eventSubject, resourceTypeOfSubject } from "./event-stream.ts";

describe("resourceTypeOfSubject", () => {
  it("reads the resource of every event subject, under any prefix", () => {
    for (const prefix of ["subdata.events", "e", "a.b.c.d"]) {
      for (const resourceType of resourceTypes) {
        expect(resourceTypeOfSubject(eventSubject(prefix, resourceType, "mer_0a1b"))).toBe(resourceType);
      }
    }
  });

  it("reads the next-to-last token, whatever the last is, and nothing else", () => {
    const cases: Array<[string, string | undefined]> = [
      ["", undefined],
      [".", undefined],
      ["subscription", undefined],
      [".subscription", undefined],
      ["subdata.events.subscription", undefined],
      ["subdata.events.refund.mer_1", undefined],
      ["subdata.subscriptions.mer_1", undefined],
      ["order.mer_1", "order"],
      ["subdata.events.charge.", "charge"],
    ];
    for (const [subject, resourceType] of cases) expect({ subject, resourceType: resourceTypeOfSubject(subject) }).toEqual({ subject, resourceType });
  });
});
