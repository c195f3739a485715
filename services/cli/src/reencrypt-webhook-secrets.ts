import { unnestColumns } from "@subdata/runtime";
import type { RekeyingSecretBox } from "@subdata/webhook";
import type pg from "pg";

export const DEFAULT_REENCRYPT_BATCH_SIZE = 500;
/** The JSON report lists at most this many unreadable endpoints (the count is always exact). */
const MAX_LISTED = 100;

export interface ReencryptOptions {
  /** A connection that may UPDATE webhook_endpoints (the owner's or subdata_webhook's). */
  client: pg.Client;
  /** Seals with SUBDATA_WEBHOOK_SECRET_KEY, opens with it or SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS. */
  secretBox: RekeyingSecretBox;
  batchSize?: number;
  /** After each committed batch: endpoints examined so far. */
  onProgress?: (examined: number) => void;
}

export interface ReencryptReport {
  endpoints: number;
  /** Sealed secrets (current and grace-period previous ones) moved onto the main key. */
  reencrypted: number;
  /** Sealed secrets that were already under the main key and were left as they are. */
  alreadyCurrent: number;
  /** Endpoints with a secret that no configured key opens; their rows keep what did not open. */
  unreadable: number;
  unreadableIds: string[];
}

interface StoredSecrets {
  id: string;
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
}

/**
 * Moves every endpoint's sealed signing secrets onto the main key, so a previous key can be dropped.
 * Walks webhook_endpoints by id in batches, one short transaction each: the batch's rows are locked
 * FOR NO KEY UPDATE (a concurrent rotate-secret waits for the batch instead of being overwritten;
 * deliveries referencing the rows are not blocked), opened, resealed and written back in one statement.
 * Secrets already under the main key are not rewritten, so running it again changes nothing.
 * updated_at is left alone: the endpoint did not change for its merchant.
 */
export async function reencryptWebhookSecrets(options: ReencryptOptions): Promise<ReencryptReport> {
  const { client, secretBox } = options;
  const batchSize = options.batchSize ?? DEFAULT_REENCRYPT_BATCH_SIZE;
  const report: ReencryptReport = { endpoints: 0, reencrypted: 0, alreadyCurrent: 0, unreadable: 0, unreadableIds: [] };

  // Undefined when no key opens it; null when it is already under the main key.
  const reseal = (sealed: Buffer, endpointId: string): Buffer | null | undefined => {
    try {
      const resealed = secretBox.reseal(sealed, endpointId);
      if (resealed === null) report.alreadyCurrent += 1;
      else report.reencrypted += 1;
      return resealed;
    } catch {
      return undefined;
    }
  };

  let after = "";
  for (;;) {
    await client.query("BEGIN");
    let rows: StoredSecrets[];
    try {
      rows = (
        await client.query<StoredSecrets>(
          `SELECT id, secret_ciphertext, previous_secret_ciphertext FROM webhook_endpoints
           WHERE id > $1 ORDER BY id LIMIT $2 FOR NO KEY UPDATE`,
          [after, batchSize],
        )
      ).rows;
      const updates: Array<{ id: string; secret: Buffer | null; previous: Buffer | null }> = [];
      for (const row of rows) {
        const secret = reseal(row.secret_ciphertext, row.id);
        const previousSecret = row.previous_secret_ciphertext === null ? null : reseal(row.previous_secret_ciphertext, row.id);
        if (secret === undefined || previousSecret === undefined) {
          report.unreadable += 1;
          if (report.unreadableIds.length < MAX_LISTED) report.unreadableIds.push(row.id);
        }
        if (secret || previousSecret) {
          updates.push({ id: row.id, secret: secret ?? null, previous: previousSecret ?? null });
        }
      }
      if (updates.length > 0) {
        // A NULL in the arrays keeps the column as it is (already current, or did not open).
        await client.query(
          `UPDATE webhook_endpoints e SET
             secret_ciphertext = coalesce(u.secret, e.secret_ciphertext),
             previous_secret_ciphertext = coalesce(u.previous, e.previous_secret_ciphertext)
           FROM unnest($1::text[], $2::bytea[], $3::bytea[]) AS u(id, secret, previous)
           WHERE e.id = u.id`,
          unnestColumns(updates, [(u) => u.id, (u) => u.secret, (u) => u.previous]),
        );
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    }
    report.endpoints += rows.length;
    options.onProgress?.(report.endpoints);
    if (rows.length < batchSize) return report;
    after = rows[rows.length - 1]!.id;
  }
}
