import { type Queryable, unnestColumns } from "@subdata/runtime";

/** Why an authentication failed, as kept in the security log (finer than the API's reasons). */
export type SecurityEventReason = "missing" | "malformed" | "bad_checksum" | "unknown" | "revoked" | "expired";

/** One failed authentication. Never carries the presented key. */
export interface SecurityEvent {
  reason: SecurityEventReason;
  /** The non-secret display prefix when the key was well-formed, else null. */
  keyPrefix: string | null;
  apiKeyId: string | null;
  clientIp: string;
  userAgent: string;
  requestId: string;
}

/** The attempts one client address made in one window while its failed authentications were throttled. */
export interface ThrottledWindow {
  clientIp: string;
  /** The window's start: the row's occurred_at. */
  windowStart: Date;
  attempts: number;
}

export interface SecurityEventRepository {
  insertMany(events: readonly SecurityEvent[]): Promise<void>;
  /** One "throttled" row per address and window; counts for a row already there are added to it. */
  addThrottled(windows: readonly ThrottledWindow[]): Promise<void>;
  /** Deletes at most `maxRows` events older than `retentionDays` (oldest first); returns how many. */
  purgeOlderThan(retentionDays: number, maxRows: number): Promise<number>;
}

export function createSecurityEventRepository(db: Queryable): SecurityEventRepository {
  return {
    async insertMany(events) {
      await db.query(
        `INSERT INTO security_events (reason, key_prefix, api_key_id, client_ip, user_agent, request_id)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
        unnestColumns(events, [(e) => e.reason, (e) => e.keyPrefix, (e) => e.apiKeyId, (e) => e.clientIp, (e) => e.userAgent, (e) => e.requestId]),
      );
    },
    async addThrottled(windows) {
      await db.query(
        `INSERT INTO security_events (reason, client_ip, occurred_at, attempts, user_agent, request_id)
         SELECT 'throttled', client_ip, window_start, attempts, '', ''
           FROM unnest($1::text[], $2::timestamptz[], $3::integer[]) AS t (client_ip, window_start, attempts)
         ON CONFLICT (client_ip, occurred_at) WHERE reason = 'throttled'
         DO UPDATE SET attempts = least(2147483647, security_events.attempts::bigint + EXCLUDED.attempts)::integer`,
        unnestColumns(windows, [(w) => w.clientIp, (w) => w.windowStart.toISOString(), (w) => w.attempts]),
      );
    },
    async purgeOlderThan(retentionDays, maxRows) {
      // The role has no DELETE on the table: a definer function purges, and only old rows (migration 0007).
      const { rows } = await db.query<{ purged: number }>("SELECT subdata_purge_security_events(make_interval(days => $1), $2) AS purged", [
        retentionDays,
        maxRows,
      ]);
      return rows[0]?.purged ?? 0;
    },
  };
}
