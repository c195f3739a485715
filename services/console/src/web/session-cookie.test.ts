import { describe, expect, it } from "vitest";
import { cookieName, readCookie, sessionCookie } from "./session-cookie.ts";

describe("session cookie", () => {
  it("is HttpOnly, SameSite=Strict, scoped to /console, and Secure with the __Secure- prefix over https", () => {
    expect(sessionCookie(cookieName(true), "v", 3600.7, true)).toBe(
      "__Secure-subdata_console=v; Path=/console; Max-Age=3600; HttpOnly; SameSite=Strict; Secure",
    );
    expect(sessionCookie(cookieName(false), "v", 10, false)).toBe("subdata_console=v; Path=/console; Max-Age=10; HttpOnly; SameSite=Strict");
  });

  it("is read by exact name among others", () => {
    expect(readCookie("a=1; subdata_console_x=2; subdata_console=abc", "subdata_console")).toBe("abc");
    expect(readCookie("a=1", "subdata_console")).toBeUndefined();
    expect(readCookie(undefined, "subdata_console")).toBeUndefined();
  });
});
