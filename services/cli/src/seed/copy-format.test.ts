import { describe, expect, it } from "vitest";
import { copyText } from "./copy-format.ts";

describe("COPY text format", () => {
  it("escapes the characters COPY treats specially and writes NULL as \\N", () => {
    expect(copyText("a\tb\nc\\d\re")).toBe("a\\tb\\nc\\\\d\\re");
    expect(copyText("Zoë O'Brien")).toBe("Zoë O'Brien");
    expect(copyText(null)).toBe("\\N");
  });
});
