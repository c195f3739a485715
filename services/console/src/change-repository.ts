import type { Queryable } from "@subdata/runtime";
import type { PortalSessionRow } from "./session-repository.ts";

/** A console_changes row: one change made in the page, by whom, and how it ended. */
export interface ChangeRow {
  id: string;
  action: string;
  target_id: string | null;
  status: "started" | "succeeded" | "failed";
  detail: string;
  user_id: string;
  user_name: string;
  session_id: string;
  created_at: string;
}

export interface ChangeRepository {
  /**
   * Records that a change begins. Undefined when the session already made a change with this
   * idempotency key (the same form submitted again): the caller reads it with find() instead.
   */
  begin(session: PortalSessionRow, action: string, targetId: string | null, idempotencyKey: string): Promise<ChangeRow | undefined>;
  find(sessionId: string, idempotencyKey: string): Promise<ChangeRow | undefined>;
  finish(id: string, outcome: { status: "succeeded" | "failed"; targetId: string | null; detail: string }): Promise<void>;
  /** The merchant's latest changes, newest first. */
  recent(merchantId: string, limit: number): Promise<ChangeRow[]>;
}

const COLUMNS = "id, action, target_id, status, detail, user_id, user_name, session_id, created_at";

export function createChangeRepository(db: Queryable): ChangeRepository {
  return {
    async begin(session, action, targetId, idempotencyKey) {
      const result = await db.query<ChangeRow>(
        `INSERT INTO console_changes (merchant_id, session_id, user_id, user_name, action, target_id, idempotency_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (session_id, idempotency_key) DO NOTHING
         RETURNING ${COLUMNS}`,
        [session.merchant_id, session.id, session.user_id, session.user_name, action, targetId, idempotencyKey],
      );
      return result.rows[0];
    },
    async find(sessionId, idempotencyKey) {
      const result = await db.query<ChangeRow>(`SELECT ${COLUMNS} FROM console_changes WHERE session_id = $1 AND idempotency_key = $2`, [
        sessionId,
        idempotencyKey,
      ]);
      return result.rows[0];
    },
    async finish(id, outcome) {
      await db.query(
        `UPDATE console_changes SET status = $2, target_id = coalesce($3, target_id), detail = $4, finished_at = now()
         WHERE id = $1`,
        [id, outcome.status, outcome.targetId, outcome.detail],
      );
    },
    async recent(merchantId, limit) {
      const result = await db.query<ChangeRow>(`SELECT ${COLUMNS} FROM console_changes WHERE merchant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [
        merchantId,
        limit,
      ]);
      return result.rows;
    },
  };
}
