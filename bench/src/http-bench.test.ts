import { describe, expect, it } from "vitest";
import { differingPaths, idsInOrder } from "./http-bench.ts";

describe("comparing the servers' bodies", () => {
  const page = {
    object: "list",
    data: [
      { id: "sub_1", customer: { id: "cus_1" }, price: { amount: "1.00", currency: "EUR" } },
      { id: "sub_2", customer: { id: "cus_2" }, price: { amount: "2.00", currency: "EUR" } },
    ],
    has_more: true,
    next_cursor: "a",
  };

  it("lists every id in document order, nested objects included", () => {
    expect(idsInOrder(page)).toEqual(["sub_1", "cus_1", "sub_2", "cus_2"]);
    expect(idsInOrder({ ...page, data: [page.data[1], page.data[0]] })).toEqual(["sub_2", "cus_2", "sub_1", "cus_1"]);
  });

  it("names the paths that differ, leaving out the skipped keys", () => {
    const other = structuredClone(page);
    other.next_cursor = "b";
    expect(differingPaths(page, other, new Set(["next_cursor"]))).toEqual([]);
    other.data[1]!.price.amount = "2.0";
    other.has_more = false;
    expect(differingPaths(page, other, new Set(["next_cursor"]))).toEqual(["data[1].price.amount", "has_more"]);
    expect(differingPaths(page, other, new Set())).toEqual(["data[1].price.amount", "has_more", "next_cursor"]);
  });
});
