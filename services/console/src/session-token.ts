import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** 32 random bytes, base64url: a one-time link token, a cookie value, an idempotency key's entropy. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Tokens are stored only as this hash, so a database read never yields a usable credential. */
export function tokenHash(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/**
 * The synchronizer token of a session's forms, derived from its cookie value: nothing to store, and
 * useless without the cookie (which scripts cannot read: HttpOnly).
 */
export function csrfTokenFor(cookieValue: string): string {
  return createHmac("sha256", cookieValue).update("subdata console csrf v1").digest("base64url");
}

/** Constant-time comparison of a presented form token against the session's. */
export function csrfTokenMatches(cookieValue: string, presented: string): boolean {
  const expected = Buffer.from(csrfTokenFor(cookieValue));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
