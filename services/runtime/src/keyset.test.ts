import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { cursorToPosition, positionToCursor, splitPage } from "./keyset.ts";

const rows = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `sub_${i}`, created_at: "2026-01-01 00:00:00.000001+00" }));
const keyOf = (row: { id: string; created_at: string }) => ({ at: row.created_at, id: row.id });

describe("splitPage", () => {
  it("has no next cursor when the extra row did not come back", () => {
    expect(splitPage(rows(3), 3, keyOf)).toEqual({ page: rows(3), next: null });
    expect(splitPage([], 3, keyOf)).toEqual({ page: [], next: null });
  });

  it("drops the extra row and points after the last row of the page", () => {
    const { page, next } = splitPage(rows(4), 3, keyOf);
    expect(page).toHaveLength(3);
    expect(next).toEqual({ at: "2026-01-01 00:00:00.000001+00", id: "sub_2" });
  });
});

describe("page token positions", () => {
  it("carry the exact created_at text and the id", () => {
    const cursor = { at: "2026-01-01 00:00:00.123456+00", id: "sub_x" };
    expect(positionToCursor(cursorToPosition(cursor))).toEqual(cursor);
  });

  it("refuse a position of another shape as an invalid page token", () => {
    expect(() => positionToCursor(["only one"])).toThrow(ConnectError);
    try {
      positionToCursor([]);
    } catch (error) {
      expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    }
  });
});
