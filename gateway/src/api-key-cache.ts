import { createHash } from "node:crypto";

/**
 * Verified API keys, so most requests skip the auth hop (it halves throughput). Keyed by the SHA-256 of
 * the presented key: the key itself is never stored. Entries live for a TTL capped by the key's own
 * expires_at; the map is bounded (least recently used goes first). Revocations evict by api_key_id.
 *
 * The cache is only trusted while the revocation listener is subscribed: when it is not, get() misses,
 * set() is ignored and everything cached is dropped, so a revocation missed meanwhile can never be
 * served from here. Failures are never cached.
 */

export interface VerifiedKey {
  apiKeyId: string;
  merchantId: string;
  /** Epoch milliseconds, or null when the key never expires. */
  expiresAtMs: number | null;
}

export interface ApiKeyCache {
  get(digest: string): VerifiedKey | undefined;
  /**
   * A token to take before asking the auth service and to hand back to set(): an answer that was in
   * flight while a revocation (or a loss of trust) happened is not cached, since it may predate it.
   */
  epoch(): number;
  set(digest: string, key: VerifiedKey, epochAtStart: number): void;
  evict(apiKeyId: string): void;
  /** Forgets everything (a revocation we could not read names no key). */
  clear(): void;
  setTrusted(trusted: boolean): void;
  readonly trusted: boolean;
  readonly size: number;
}

export interface ApiKeyCacheOptions {
  ttlMs: number;
  maxEntries: number;
  /** Epoch milliseconds. */
  now: () => number;
}

/** Hex SHA-256 of a presented key: the only form in which a key is kept or compared in the gateway. */
export function digestOfKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

interface Entry {
  key: VerifiedKey;
  validUntilMs: number;
}

export function createApiKeyCache(options: ApiKeyCacheOptions): ApiKeyCache {
  const entries = new Map<string, Entry>();
  const digestByKeyId = new Map<string, string>();
  let trusted = false;
  let epoch = 0;

  function remove(digest: string): void {
    const entry = entries.get(digest);
    if (!entry) return;
    entries.delete(digest);
    if (digestByKeyId.get(entry.key.apiKeyId) === digest) digestByKeyId.delete(entry.key.apiKeyId);
  }

  return {
    get(digest) {
      if (!trusted) return undefined;
      const entry = entries.get(digest);
      if (!entry) return undefined;
      if (options.now() >= entry.validUntilMs) {
        remove(digest);
        return undefined;
      }
      // Re-insert: Map order is the LRU order.
      entries.delete(digest);
      entries.set(digest, entry);
      return entry.key;
    },
    epoch: () => epoch,
    set(digest, key, epochAtStart) {
      if (!trusted || epochAtStart !== epoch) return;
      const validUntilMs = Math.min(options.now() + options.ttlMs, key.expiresAtMs ?? Number.POSITIVE_INFINITY);
      if (validUntilMs <= options.now()) return;
      remove(digest);
      entries.set(digest, { key, validUntilMs });
      digestByKeyId.set(key.apiKeyId, digest);
      while (entries.size > options.maxEntries) {
        const oldest = entries.keys().next().value as string;
        remove(oldest);
      }
    },
    evict(apiKeyId) {
      epoch++;
      const digest = digestByKeyId.get(apiKeyId);
      if (digest) remove(digest);
    },
    clear() {
      epoch++;
      entries.clear();
      digestByKeyId.clear();
    },
    setTrusted(next) {
      epoch++;
      trusted = next;
      if (!next) {
        entries.clear();
        digestByKeyId.clear();
      }
    },
    get trusted() {
      return trusted;
    },
    get size() {
      return entries.size;
    },
  };
}
