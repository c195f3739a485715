import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

/**
 * Standard Webhooks v1 signatures: base64 HMAC-SHA256, keyed with the secret's bytes (the base64 after
 * "whsec_"), over "<webhook-id>.<webhook-timestamp>.<body>". Byte-compatible with the standardwebhooks
 * libraries, so receivers verify with `new Webhook(secret).verify(body, headers)`.
 */

const SECRET_PREFIX = "whsec_";

export function secretKeyBytes(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, "base64");
  if (key.length === 0) throw new Error("webhook signing secret is empty");
  return key;
}

/**
 * A secret's HMAC key, made once per secret and reused for every signature: on Node 24 an HMAC keyed
 * with a Buffer costs about six times one keyed with a KeyObject (21 against 3.4 µs for a 1.5 kB
 * body; on Node 20 both were 3.6 µs).
 */
export function signingKey(secret: string): KeyObject {
  return createSecretKey(secretKeyBytes(secret));
}

/** One "v1,<base64>" entry. */
export function signWebhook(key: KeyObject, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/**
 * The webhook-signature header: one entry per valid secret's key, space-separated, newest first
 * (during a rotation's grace period a receiver may still hold the previous secret).
 */
export function signatureHeader(keys: readonly KeyObject[], id: string, timestampSeconds: number, body: string): string {
  if (keys.length === 0) throw new Error("an endpoint needs at least one signing secret");
  return keys.map((key) => signWebhook(key, id, timestampSeconds, body)).join(" ");
}
