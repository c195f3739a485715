import { createHmac } from "node:crypto";

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

/** One "v1,<base64>" entry. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", secretKeyBytes(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/**
 * The webhook-signature header: one entry per valid secret, space-separated, newest first (during a
 * rotation's grace period a receiver may still hold the previous secret).
 */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  if (secrets.length === 0) throw new Error("an endpoint needs at least one signing secret");
  return secrets.map((secret) => signWebhook(secret, id, timestampSeconds, body)).join(" ");
}
