import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { resolvePageSize } from "./page-size.ts";

describe("resolvePageSize", () => {
  it("reads 0 as the default of 50", () => expect(resolvePageSize(0)).toBe(50));
  it.each([1, 7, 200])("keeps %i", (size) => expect(resolvePageSize(size)).toBe(size));
  it.each([-1, 201, 1_000_000])("refuses %i with INVALID_ARGUMENT on page_size", (size) => {
    const error = (() => {
      try {
        resolvePageSize(size);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toMatch(/^page_size:/);
  });
});
