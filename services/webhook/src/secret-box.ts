import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Seals webhook signing secrets at rest with AES-256-GCM. Layout: version (1 byte) | nonce (12) |
 * ciphertext | tag (16). The endpoint id is the additional authenticated data, so a sealed secret copied
 * onto another endpoint's row does not open.
 */
export interface SecretBox {
  seal(plaintext: string, associatedData: string): Buffer;
  /** Throws if the data was tampered with, sealed for another row, or sealed with another key. */
  open(sealed: Buffer, associatedData: string): string;
}

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** `keyBase64` is SUBDATA_WEBHOOK_SECRET_KEY: base64 of exactly 32 random bytes. */
export function createSecretBox(keyBase64: string): SecretBox {
  const key = Buffer.from(keyBase64, "base64");
  if (key.length !== 32) throw new Error("SUBDATA_WEBHOOK_SECRET_KEY must be base64 of exactly 32 bytes");
  return {
    seal(plaintext, associatedData) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      cipher.setAAD(Buffer.from(associatedData));
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), nonce, ciphertext, cipher.getAuthTag()]);
    },
    open(sealed, associatedData) {
      if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new Error("unknown sealed secret format");
      const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
      const tag = sealed.subarray(sealed.length - TAG_BYTES);
      const decipher = createDecipheriv("aes-256-gcm", key, nonce);
      decipher.setAAD(Buffer.from(associatedData));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE_BYTES, sealed.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    },
  };
}

/** A new Standard Webhooks signing secret: "whsec_" + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}
