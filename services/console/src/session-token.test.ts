import { describe, expect, it } from "vitest";
import { csrfTokenFor, csrfTokenMatches, newToken, tokenHash } from "./session-token.ts";

describe("session tokens", () => {
  it("are random, stored as 32-byte hashes", () => {
    expect(newToken()).not.toBe(newToken());
    expect(tokenHash(newToken())).toHaveLength(32);
  });

  it("derive a form token per cookie that only that cookie's session accepts", () => {
    const cookie = newToken();
    const other = newToken();
    expect(csrfTokenMatches(cookie, csrfTokenFor(cookie))).toBe(true);
    expect(csrfTokenMatches(cookie, csrfTokenFor(other))).toBe(false);
    expect(csrfTokenMatches(cookie, "")).toBe(false);
  });
});
