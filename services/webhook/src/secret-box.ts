import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Seals webhook signing secrets at rest with AES-256-GCM. Layout: version (1 byte) | nonce (12) |
 * ciphertext | tag (16). The endpoint id is the additional authenticated data, so a sealed secret copied
 * onto another endpoint's row does not open.
 *
 * Sealing always uses the main key (SUBDATA_WEBHOOK_SECRET_KEY); opening tries it, then the previous
 * keys (SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS), so the key can be rotated without a gap. GCM
 * authenticates, so a wrong key fails cleanly instead of yielding garbage.
 */
export interface SecretBox {
  seal(plaintext: string, associatedData: string): Buffer;
  /** Throws if the data was tampered with, sealed for another row, or sealed with none of the keys. */
  open(sealed: Buffer, associatedData: string): string;
}

/** What createSecretBox makes: a SecretBox that can also move a sealed secret onto the main key. */
export interface RekeyingSecretBox extends SecretBox {
  /**
   * The same secret sealed with the main key, or null when it already is. Throws like open() when no
   * key opens it. For `subdata webhooks reencrypt-secrets`, before a previous key is dropped.
   */
  reseal(sealed: Buffer, associatedData: string): Buffer | null;
}

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

function keyFrom(keyBase64: string, variable: string): Buffer {
  const key = Buffer.from(keyBase64, "base64");
  if (key.length !== 32) throw new Error(`${variable} must be base64 of exactly 32 bytes`);
  return key;
}

/** Undefined when `key` does not open it (wrong key, another row, tampered). */
function openWith(key: Buffer, sealed: Buffer, associatedData: string): string | undefined {
  const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", key, nonce);
  decipher.setAAD(Buffer.from(associatedData));
  decipher.setAuthTag(tag);
  const plaintext = decipher.update(sealed.subarray(1 + NONCE_BYTES, sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([plaintext, decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}

/**
 * `keyBase64` is SUBDATA_WEBHOOK_SECRET_KEY, `previousKeysBase64` SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS:
 * each base64 of exactly 32 random bytes.
 */
export function createSecretBox(keyBase64: string, previousKeysBase64: readonly string[] = []): RekeyingSecretBox {
  const key = keyFrom(keyBase64, "SUBDATA_WEBHOOK_SECRET_KEY");
  const previous = previousKeysBase64.map((text) => keyFrom(text, "each of SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS"));
  const checkFormat = (sealed: Buffer) => {
    if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new Error("unknown sealed secret format");
  };
  const openWithPrevious = (sealed: Buffer, associatedData: string): string => {
    for (const candidate of previous) {
      const plaintext = openWith(candidate, sealed, associatedData);
      if (plaintext !== undefined) return plaintext;
    }
    throw new Error("the sealed secret opens with none of the keys (tampered, sealed for another endpoint, or with a key not configured)");
  };
  const seal = (plaintext: string, associatedData: string): Buffer => {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", key, nonce);
    cipher.setAAD(Buffer.from(associatedData));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), nonce, ciphertext, cipher.getAuthTag()]);
  };
  return {
    seal,
    open(sealed, associatedData) {
      checkFormat(sealed);
      return openWith(key, sealed, associatedData) ?? openWithPrevious(sealed, associatedData);
    },
    reseal(sealed, associatedData) {
      checkFormat(sealed);
      if (openWith(key, sealed, associatedData) !== undefined) return null;
      return seal(openWithPrevious(sealed, associatedData), associatedData);
    },
  };
}

/** A new Standard Webhooks signing secret: "whsec_" + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}
