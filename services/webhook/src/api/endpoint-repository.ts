import type { KeysetCursor, Queryable } from "@subdata/runtime";

export type EndpointStatusText = "ENABLED" | "DISABLED";

/** An endpoint row without its sealed secrets: nothing read here can leak one. */
export interface EndpointRow {
  id: string;
  merchant_id: string;
  url: string;
  description: string;
  event_types: string[];
  status: EndpointStatusText;
  disabled_reason: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface NewEndpoint {
  id: string;
  merchantId: string;
  url: string;
  description: string;
  eventTypes: readonly string[];
  /** Sealed with the endpoint id as associated data. */
  secretCiphertext: Buffer;
}

/** The fields an update changes; undefined leaves one as it is. */
export interface EndpointChanges {
  url?: string;
  description?: string;
  eventTypes?: readonly string[];
  status?: EndpointStatusText;
}

export interface EndpointRepository {
  /** Undefined when the merchant does not exist. */
  insert(endpoint: NewEndpoint): Promise<EndpointRow | undefined>;
  find(merchantId: string, id: string): Promise<EndpointRow | undefined>;
  list(merchantId: string, after: KeysetCursor | null, limit: number): Promise<EndpointRow[]>;
  /** Disabling cancels the endpoint's pending deliveries in the same statement. */
  update(merchantId: string, id: string, changes: EndpointChanges): Promise<EndpointRow | undefined>;
  /** Deliveries and attempts go with it (ON DELETE CASCADE). False when there was nothing to delete. */
  delete(merchantId: string, id: string): Promise<boolean>;
  /**
   * The current secret becomes the previous one until now() + grace (dropped when grace is 0), and
   * `secretCiphertext` becomes current. Any older previous secret is dropped.
   */
  rotateSecret(merchantId: string, id: string, secretCiphertext: Buffer, graceMicros: bigint): Promise<EndpointRow | undefined>;
}

const DISABLED_BY_MERCHANT = "disabled by the merchant";

// Timestamps as the exact text a UTC session prints (the pool keeps timestamptz as text).
const COLUMNS = `id, merchant_id, url, description, event_types, status, disabled_reason,
  previous_secret_expires_at, created_at, updated_at`;

export function createEndpointRepository(db: Queryable): EndpointRepository {
  return {
    async insert(endpoint) {
      // INSERT … SELECT FROM merchants: an unknown merchant inserts nothing, in one statement.
      const result = await db.query<EndpointRow>(
        `INSERT INTO webhook_endpoints (id, merchant_id, url, description, event_types, secret_ciphertext)
         SELECT $1, m.id, $3, $4, $5::text[], $6 FROM merchants m WHERE m.id = $2
         RETURNING ${COLUMNS}`,
        [endpoint.id, endpoint.merchantId, endpoint.url, endpoint.description, endpoint.eventTypes, endpoint.secretCiphertext],
      );
      return result.rows[0];
    },

    async find(merchantId, id) {
      const result = await db.query<EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE merchant_id = $1 AND id = $2`, [merchantId, id]);
      return result.rows[0];
    },

    async list(merchantId, after, limit) {
      const result = await db.query<EndpointRow>(
        `SELECT ${COLUMNS} FROM webhook_endpoints
         WHERE merchant_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::text))
         ORDER BY created_at, id LIMIT $4`,
        [merchantId, after?.at ?? null, after?.id ?? null, limit],
      );
      return result.rows;
    },

    async update(merchantId, id, changes) {
      // SET expressions read the old row, so "was it disabled?" is the status before this update:
      // re-enabling clears the reason and the failure clock; disabling an enabled endpoint records why.
      const result = await db.query<EndpointRow>(
        `WITH updated AS (
           UPDATE webhook_endpoints SET
             url = coalesce($3, url),
             description = coalesce($4, description),
             event_types = coalesce($5::text[], event_types),
             status = coalesce($6::webhook_endpoint_status, status),
             disabled_reason = CASE
               WHEN $6 = 'ENABLED' THEN NULL
               WHEN $6 = 'DISABLED' AND status = 'ENABLED' THEN $7
               ELSE disabled_reason END,
             failing_since = CASE WHEN $6 = 'ENABLED' AND status = 'DISABLED' THEN NULL ELSE failing_since END,
             updated_at = now()
           WHERE merchant_id = $1 AND id = $2
           RETURNING ${COLUMNS}
         ), cancelled AS (
           -- "version IS NOT NULL": see the claim's group probe (delivery/claim-repository.ts).
           UPDATE webhook_deliveries d SET status = 'CANCELLED'
           FROM updated u
           WHERE d.endpoint_id = u.id AND d.merchant_id = $1 AND d.status = 'PENDING' AND d.version IS NOT NULL AND u.status = 'DISABLED'
         )
         SELECT * FROM updated`,
        [merchantId, id, changes.url ?? null, changes.description ?? null, changes.eventTypes ?? null, changes.status ?? null, DISABLED_BY_MERCHANT],
      );
      return result.rows[0];
    },

    async delete(merchantId, id) {
      const result = await db.query("DELETE FROM webhook_endpoints WHERE merchant_id = $1 AND id = $2", [merchantId, id]);
      return (result.rowCount ?? 0) > 0;
    },

    async rotateSecret(merchantId, id, secretCiphertext, graceMicros) {
      // The sealed bytes move as they are: both columns are sealed with the endpoint id as associated data.
      const result = await db.query<EndpointRow>(
        `UPDATE webhook_endpoints SET
           previous_secret_ciphertext = CASE WHEN $4::bigint > 0 THEN secret_ciphertext END,
           previous_secret_expires_at = CASE WHEN $4::bigint > 0 THEN now() + $4::bigint * interval '1 microsecond' END,
           secret_ciphertext = $3,
           updated_at = now()
         WHERE merchant_id = $1 AND id = $2
         RETURNING ${COLUMNS}`,
        [merchantId, id, secretCiphertext, graceMicros.toString()],
      );
      return result.rows[0];
    },
  };
}
