import type { Queryable } from "@subdata/runtime";

/** A portal_sessions row as the service sees it; timestamps are the exact text Postgres sent. */
export interface PortalSessionRow {
  id: string;
  merchant_id: string;
  user_id: string;
  user_name: string;
  created_at: string;
  expires_at: string;
  opened_at: string | null;
  revoked_at: string | null;
}

export interface NewPortalSession {
  merchantId: string;
  userId: string;
  userName: string;
  openTokenHash: Buffer;
  ttlSeconds: number;
  /** The link must be opened within this many seconds (capped by the session's lifetime). */
  openWithinSeconds: number;
}

export interface SessionRepository {
  /** Undefined when the merchant does not exist. */
  insert(session: NewPortalSession): Promise<PortalSessionRow | undefined>;
  /**
   * Trades a link's one-time token for a cookie: clears the token (a second opening finds nothing) and
   * stores the cookie's hash. Undefined when the token is unknown, used, past its opening window, or
   * its session expired or was revoked.
   */
  open(openTokenHash: Buffer, cookieHash: Buffer): Promise<PortalSessionRow | undefined>;
  /** The live session of a cookie: opened, not expired, not revoked. */
  findByCookie(cookieHash: Buffer): Promise<PortalSessionRow | undefined>;
  /** Sets revoked_at once; undefined when not this merchant's session. */
  revoke(merchantId: string, id: string): Promise<PortalSessionRow | undefined>;
}

const COLUMNS = "id, merchant_id, user_id, user_name, created_at, expires_at, opened_at, revoked_at";

export function createSessionRepository(db: Queryable): SessionRepository {
  return {
    async insert(session) {
      // Inserting from merchants makes "merchant exists" and the insert one statement.
      const result = await db.query<PortalSessionRow>(
        `INSERT INTO portal_sessions (merchant_id, user_id, user_name, open_token_hash, expires_at, open_by)
         SELECT id, $2, $3, $4, now() + make_interval(secs => $5), now() + make_interval(secs => least($5, $6))
         FROM merchants WHERE id = $1
         RETURNING ${COLUMNS}`,
        [session.merchantId, session.userId, session.userName, session.openTokenHash, session.ttlSeconds, session.openWithinSeconds],
      );
      return result.rows[0];
    },
    async open(openTokenHash, cookieHash) {
      const result = await db.query<PortalSessionRow>(
        `UPDATE portal_sessions SET open_token_hash = NULL, cookie_hash = $2, opened_at = now()
         WHERE open_token_hash = $1 AND open_by > now() AND expires_at > now() AND revoked_at IS NULL
         RETURNING ${COLUMNS}`,
        [openTokenHash, cookieHash],
      );
      return result.rows[0];
    },
    async findByCookie(cookieHash) {
      const result = await db.query<PortalSessionRow>(
        `SELECT ${COLUMNS} FROM portal_sessions WHERE cookie_hash = $1 AND expires_at > now() AND revoked_at IS NULL`,
        [cookieHash],
      );
      return result.rows[0];
    },
    async revoke(merchantId, id) {
      const result = await db.query<PortalSessionRow>(
        `UPDATE portal_sessions SET revoked_at = coalesce(revoked_at, now()), open_token_hash = NULL
         WHERE merchant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
        [merchantId, id],
      );
      return result.rows[0];
    },
  };
}
