import { describe, expect, it } from "vitest";
import { API_KEY_LENGTH, checksumOf, generateApiKey, parseApiKey, verifyChecksum } from "./api-key-format.ts";

describe("API key format", () => {
  it("generates sds_ + 32 base62 + a 6-character checksum that verifies", () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key).toMatch(/^sds_[0-9A-Za-z]{38}$/);
      expect(key).toHaveLength(API_KEY_LENGTH);
      expect(verifyChecksum(key)).toBe(true);
      expect(parseApiKey(key)).toEqual({ ok: true, key, displayPrefix: key.slice(0, 8) });
    }
  });

  it("discards random bytes that would bias the alphabet", () => {
    // All 0xff (rejected) until the source starts giving 0x3d (61 → "z").
    let calls = 0;
    const key = generateApiKey((size) => Buffer.alloc(size, calls++ < 3 ? 0xff : 0x3d));
    expect(key.slice(4, 36)).toBe("z".repeat(32));
    expect(verifyChecksum(key)).toBe(true);
  });

  it("spreads characters over the whole alphabet", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) for (const c of generateApiKey().slice(4, 36)) seen.add(c);
    expect(seen.size).toBe(62);
  });

  it("left-pads the checksum to 6 characters", () => {
    for (const text of ["", "a", "sds_x", "sds_0000"]) expect(checksumOf(text)).toMatch(/^[0-9A-Za-z]{6}$/);
    expect(checksumOf("")).toBe("000000"); // crc32("") is 0
  });

  it("refuses a wrong prefix as malformed", () => {
    const key = generateApiKey();
    expect(parseApiKey(`sdx_${key.slice(4)}`)).toEqual({ ok: false, problem: "malformed", displayPrefix: null });
    expect(parseApiKey(`ghp_${key.slice(4)}`).ok).toBe(false);
  });

  it("refuses a wrong length as malformed", () => {
    const key = generateApiKey();
    expect(parseApiKey(key.slice(0, -1))).toMatchObject({ problem: "malformed" });
    expect(parseApiKey(`${key}0`)).toMatchObject({ problem: "malformed" });
    expect(parseApiKey("")).toMatchObject({ problem: "malformed" });
  });

  it("refuses characters outside base62 as malformed", () => {
    const key = generateApiKey();
    for (const bad of ["-", "_", "+", "/", "=", " ", "é", "\n"]) {
      expect(parseApiKey(key.slice(0, 10) + bad + key.slice(11))).toMatchObject({ ok: false, problem: "malformed" });
    }
  });

  it("refuses a bad checksum, keeping only the display prefix", () => {
    const key = generateApiKey();
    const flipped = key.slice(0, 20) + (key[20] === "a" ? "b" : "a") + key.slice(21);
    expect(parseApiKey(flipped)).toEqual({ ok: false, problem: "bad_checksum", displayPrefix: flipped.slice(0, 8) });
    const badSum = key.slice(0, -1) + (key.endsWith("0") ? "1" : "0");
    expect(verifyChecksum(badSum)).toBe(false);
  });
});
