import type pg from "pg";
import { CliError } from "./cli-error.ts";
import type { SubscriptionStatus } from "./seed/rows.ts";

export interface SetStatusInput {
  subscriptionId: string;
  status: SubscriptionStatus;
  /** For CANCELLED; defaults to the current reason, or "requested_by_customer". */
  reason: string | null;
}

export interface StatusChange {
  id: string;
  previousStatus: SubscriptionStatus;
  status: SubscriptionStatus;
  previousVersion: number;
  version: number;
  /** False when the subscription already was in that state: the database then keeps version. */
  changed: boolean;
}

/**
 * Side fields follow the status the way the generator makes them (old values on the right of SET):
 * paused_at only while PAUSED, cancelled_at + reason only while CANCELLED, next_charge_at only while
 * chargeable (ACTIVE: the period end or now; TRIALING: the trial end; PAST_DUE: the next retry).
 * Setting the status a subscription already has keeps its fields, so it is a no-op (same version).
 */
const UPDATE_SQL = `
UPDATE subscriptions SET
  status = $2::text::subscription_status,
  paused_at = CASE WHEN $2::text = 'PAUSED' THEN CASE WHEN status = 'PAUSED' THEN coalesce(paused_at, now()) ELSE now() END END,
  cancelled_at = CASE WHEN $2::text = 'CANCELLED' THEN CASE WHEN status = 'CANCELLED' THEN coalesce(cancelled_at, now()) ELSE now() END END,
  cancellation_reason = CASE WHEN $2::text = 'CANCELLED'
    THEN coalesce($3::text, CASE WHEN status = 'CANCELLED' THEN cancellation_reason END, 'requested_by_customer') END,
  trial_ends_at = CASE WHEN $2::text = 'TRIALING' AND (trial_ends_at IS NULL OR trial_ends_at <= now())
    THEN now() + interval '14 days' ELSE trial_ends_at END,
  next_charge_at = CASE $2::text
    WHEN 'ACTIVE' THEN CASE WHEN status = 'ACTIVE' AND next_charge_at IS NOT NULL THEN next_charge_at ELSE greatest(current_period_end, now()) END
    WHEN 'TRIALING' THEN CASE WHEN trial_ends_at IS NULL OR trial_ends_at <= now() THEN now() + interval '14 days' ELSE trial_ends_at END
    WHEN 'PAST_DUE' THEN CASE WHEN status = 'PAST_DUE' AND next_charge_at IS NOT NULL THEN next_charge_at ELSE now() + interval '1 day' END
  END
WHERE id = $1
RETURNING status::text AS status, version::text AS version`;

/** Changes one subscription in a plain transaction, as the app would; the database bumps version. */
export async function setSubscriptionStatus(client: pg.ClientBase, input: SetStatusInput): Promise<StatusChange> {
  await client.query("BEGIN");
  try {
    const before = await client.query<{ status: SubscriptionStatus; version: string }>(
      "SELECT status::text AS status, version::text AS version FROM subscriptions WHERE id = $1 FOR UPDATE",
      [input.subscriptionId],
    );
    const previous = before.rows[0];
    if (!previous) throw new CliError(`subscription ${input.subscriptionId} not found`, "not_found");
    const after = await client.query<{ status: SubscriptionStatus; version: string }>(UPDATE_SQL, [input.subscriptionId, input.status, input.reason]);
    await client.query("COMMIT");
    const current = after.rows[0] as { status: SubscriptionStatus; version: string };
    return {
      id: input.subscriptionId,
      previousStatus: previous.status,
      status: current.status,
      previousVersion: Number(previous.version),
      version: Number(current.version),
      changed: current.version !== previous.version,
    };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}
