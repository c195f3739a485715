import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSecretBox, generateSigningSecret } from "./secret-box.ts";

const box = createSecretBox(randomBytes(32).toString("base64"));

describe("secret box", () => {
  it("opens what it sealed for the same row", () => {
    const secret = generateSigningSecret();
    const sealed = box.seal(secret, "we_1");
    expect(sealed.includes(Buffer.from(secret))).toBe(false);
    expect(box.open(sealed, "we_1")).toBe(secret);
  });

  it("refuses a secret sealed for another endpoint, tampered with, or sealed with another key", () => {
    const sealed = box.seal("whsec_x", "we_1");
    expect(() => box.open(sealed, "we_2")).toThrow();
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 20] = (tampered[tampered.length - 20] ?? 0) ^ 1;
    expect(() => box.open(tampered, "we_1")).toThrow();
    expect(() => createSecretBox(randomBytes(32).toString("base64")).open(sealed, "we_1")).toThrow();
  });

  it("refuses a key that is not 32 bytes", () => {
    expect(() => createSecretBox(randomBytes(16).toString("base64"))).toThrow(/32 bytes/);
  });

  it("makes Standard Webhooks secrets: whsec_ and 32 random bytes", () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
  });
});
