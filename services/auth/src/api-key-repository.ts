import type { Queryable } from "@subdata/runtime";

/** An api_keys row as the service sees it; timestamps are the exact text Postgres sent. */
export interface ApiKeyRow {
  id: string;
  merchant_id: string;
  name: string;
  display_prefix: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** The row found for a presented key, with what authentication decides on. */
export interface ApiKeyCredentialRow extends ApiKeyRow {
  key_hash: Buffer;
  /** Judged by the database clock, the same one that stamps revoked_at. */
  expired: boolean;
}

export interface NewApiKey {
  merchantId: string;
  name: string;
  displayPrefix: string;
  keyHash: Buffer;
  /** Postgres timestamptz text, or null for never. */
  expiresAt: string | null;
}

/** Keyset position of ListApiKeys (newest first). */
export interface ApiKeyPosition {
  createdAt: string;
  id: string;
}

export interface ApiKeyRepository {
  /** Undefined when the merchant does not exist. */
  insert(key: NewApiKey): Promise<ApiKeyRow | undefined>;
  /** Newest first, strictly after `after` in that order. */
  list(merchantId: string, after: ApiKeyPosition | undefined, limit: number): Promise<ApiKeyRow[]>;
  /** Sets revoked_at once (later calls keep the first time); undefined when not this merchant's key. */
  revoke(merchantId: string, id: string): Promise<ApiKeyRow | undefined>;
  /** One indexed lookup by the unique hash. */
  findByHash(keyHash: Buffer): Promise<ApiKeyCredentialRow | undefined>;
  /** Bumps last_used_at unless it was set within the last minute (cheap when it was). */
  touchLastUsed(id: string): Promise<void>;
}

const COLUMNS = "id, merchant_id, name, display_prefix, created_at, expires_at, revoked_at, last_used_at";

export function createApiKeyRepository(db: Queryable): ApiKeyRepository {
  return {
    async insert(key) {
      // Inserting from merchants makes "merchant exists" and the insert one statement.
      const result = await db.query<ApiKeyRow>(
        `INSERT INTO api_keys (merchant_id, name, display_prefix, key_hash, expires_at)
         SELECT id, $2, $3, $4, $5::timestamptz FROM merchants WHERE id = $1
         RETURNING ${COLUMNS}`,
        [key.merchantId, key.name, key.displayPrefix, key.keyHash, key.expiresAt],
      );
      return result.rows[0];
    },
    async list(merchantId, after, limit) {
      const result = after
        ? await db.query<ApiKeyRow>(
            `SELECT ${COLUMNS} FROM api_keys
             WHERE merchant_id = $1 AND (created_at, id) < ($2::timestamptz, $3)
             ORDER BY created_at DESC, id DESC LIMIT $4`,
            [merchantId, after.createdAt, after.id, limit],
          )
        : await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE merchant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [merchantId, limit]);
      return result.rows;
    },
    async revoke(merchantId, id) {
      const result = await db.query<ApiKeyRow>(
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
         WHERE merchant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
        [merchantId, id],
      );
      return result.rows[0];
    },
    async findByHash(keyHash) {
      const result = await db.query<ApiKeyCredentialRow>(
        `SELECT ${COLUMNS}, key_hash, (expires_at IS NOT NULL AND expires_at <= now()) AS expired
         FROM api_keys WHERE key_hash = $1`,
        [keyHash],
      );
      return result.rows[0];
    },
    async touchLastUsed(id) {
      await db.query(
        `UPDATE api_keys SET last_used_at = now()
         WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
        [id],
      );
    },
  };
}
