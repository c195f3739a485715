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

describe("secret box during a master key rotation", () => {
  const oldKey = randomBytes(32).toString("base64");
  const newKey = randomBytes(32).toString("base64");
  const before = createSecretBox(oldKey);
  const rotated = createSecretBox(newKey, [oldKey]);

  it("opens a secret sealed with a previous key", () => {
    const secret = generateSigningSecret();
    expect(rotated.open(before.seal(secret, "we_1"), "we_1")).toBe(secret);
  });

  it("seals with the main key only", () => {
    const sealed = rotated.seal("whsec_x", "we_1");
    expect(createSecretBox(newKey).open(sealed, "we_1")).toBe("whsec_x");
    expect(() => before.open(sealed, "we_1")).toThrow();
  });

  it("refuses what none of its keys sealed, and a previous key's secret sealed for another endpoint", () => {
    const stranger = createSecretBox(randomBytes(32).toString("base64"));
    expect(() => rotated.open(stranger.seal("whsec_x", "we_1"), "we_1")).toThrow(/none of the keys/);
    expect(() => rotated.open(before.seal("whsec_x", "we_1"), "we_2")).toThrow(/none of the keys/);
  });

  it("reseals a previous key's secret under the main key, and leaves one already under it (null)", () => {
    const secret = generateSigningSecret();
    const resealed = rotated.reseal(before.seal(secret, "we_1"), "we_1");
    expect(resealed).not.toBeNull();
    expect(createSecretBox(newKey).open(resealed!, "we_1")).toBe(secret);
    expect(rotated.reseal(resealed!, "we_1")).toBeNull();
    expect(() => rotated.reseal(createSecretBox(randomBytes(32).toString("base64")).seal(secret, "we_1"), "we_1")).toThrow();
  });

  it("refuses a previous key that is not 32 bytes", () => {
    expect(() => createSecretBox(newKey, [randomBytes(16).toString("base64")])).toThrow(/SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS/);
  });
});
