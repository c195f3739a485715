import { formatMinorUnits } from "@subdata/runtime";
import type pg from "pg";
import { CliError } from "./cli-error.ts";
import { inTransaction } from "./database.ts";
import { type DecimalAmount, toMinorUnits } from "./option-parsers.ts";
import { FAILURES } from "./seed/catalog.ts";
import type { ChargeStatus } from "./seed/rows.ts";

/** What `charges set-status` sets; a partial refund needs an amount, so it goes through refundCharge. */
export const SETTABLE_CHARGE_STATUSES = ["PENDING", "SUCCEEDED", "FAILED", "SKIPPED", "REFUNDED"] as const;
export type SettableChargeStatus = (typeof SETTABLE_CHARGE_STATUSES)[number];

/** The generator's failure codes and their messages: the defaults of a FAILED charge. */
export const FAILURE_MESSAGES: ReadonlyMap<string, string> = new Map(FAILURES.map(([code, message]) => [code, message]));
const DEFAULT_FAILURE_CODE = "card_declined";
/** For a FAILED charge whose stored code has no message and no catalog entry (not written by us). */
const GENERIC_FAILURE_MESSAGE = "The payment failed.";

export interface SetChargeStatusInput {
  chargeId: string;
  status: SettableChargeStatus;
  /** FAILED only; default: the current code when already FAILED, else card_declined. */
  failureCode: string | null;
  /** FAILED only; default: the current message when the code stays, else the code's catalog message. */
  failureMessage: string | null;
}

export interface RefundChargeInput {
  chargeId: string;
  /** In the charge's currency; more than 0. */
  amount: DecimalAmount;
}

/** A charge before and after one change. Money as decimal strings in the charge's currency. */
export interface ChargeChange {
  id: string;
  previousStatus: ChargeStatus;
  status: ChargeStatus;
  previousVersion: number;
  version: number;
  /** False when the charge already was in that state: the database then keeps version. */
  changed: boolean;
  currency: string;
  amount: string;
  previousAmountRefunded: string;
  amountRefunded: string;
}

/** A refund: the change, and what this refund added to amountRefunded. */
export interface ChargeRefund extends ChargeChange {
  refunded: string;
}

export interface ChargeDeletion {
  id: string;
  previousStatus: ChargeStatus;
  status: null;
  previousVersion: number;
  version: null;
  changed: true;
  /** Orders that named the charge: the foreign key sets their charge_id to null (each an order.updated). */
  ordersDetached: string[];
}

interface ChargeRow {
  status: ChargeStatus;
  version: string;
  currency: string;
  amount_minor: string;
  amount_refunded_minor: string;
  failure_code: string | null;
  failure_message: string | null;
}

const LOCK_SQL = `
SELECT status::text AS status, version::text AS version, currency, amount_minor::text AS amount_minor,
       amount_refunded_minor::text AS amount_refunded_minor, failure_code, failure_message
  FROM charges WHERE id = $1 FOR UPDATE`;

async function lockCharge(client: pg.ClientBase, chargeId: string): Promise<ChargeRow> {
  const row = (await client.query<ChargeRow>(LOCK_SQL, [chargeId])).rows[0];
  if (!row) throw new CliError(`charge ${chargeId} not found`, "not_found");
  return row;
}

function changeOf(id: string, before: ChargeRow, after: ChargeRow): ChargeChange {
  return {
    id,
    previousStatus: before.status,
    status: after.status,
    previousVersion: Number(before.version),
    version: Number(after.version),
    changed: after.version !== before.version,
    currency: after.currency,
    amount: formatMinorUnits(BigInt(after.amount_minor), after.currency),
    previousAmountRefunded: formatMinorUnits(BigInt(before.amount_refunded_minor), before.currency),
    amountRefunded: formatMinorUnits(BigInt(after.amount_refunded_minor), after.currency),
  };
}

/**
 * Side fields follow the status the way the generator makes them (old values on the right of SET):
 * processed_at only once processed (set to now when leaving PENDING or SKIPPED, which have none),
 * failure_code and failure_message only while FAILED, amount_refunded the whole amount while REFUNDED
 * and 0 otherwise. Setting the state a charge already has is a no-op (same version).
 */
const SET_STATUS_SQL = `
UPDATE charges SET
  status = $2::text::charge_status,
  processed_at = CASE
    WHEN $2::text IN ('PENDING', 'SKIPPED') THEN NULL
    WHEN status IN ('PENDING', 'SKIPPED') OR processed_at IS NULL THEN now()
    ELSE processed_at END,
  failure_code = CASE WHEN $2::text = 'FAILED' THEN $3::text END,
  failure_message = CASE WHEN $2::text = 'FAILED' THEN $4::text END,
  amount_refunded_minor = CASE WHEN $2::text = 'REFUNDED' THEN amount_minor ELSE 0 END
WHERE id = $1
RETURNING status::text AS status, version::text AS version, currency, amount_minor::text AS amount_minor,
          amount_refunded_minor::text AS amount_refunded_minor, failure_code, failure_message`;

/** Changes one charge's status in a plain transaction, as the app would; the database bumps version. */
export async function setChargeStatus(client: pg.ClientBase, input: SetChargeStatusInput): Promise<ChargeChange> {
  return inTransaction(client, async () => {
    const before = await lockCharge(client, input.chargeId);
    let failureCode: string | null = null;
    let failureMessage: string | null = null;
    if (input.status === "FAILED") {
      const wasFailed = before.status === "FAILED";
      failureCode = input.failureCode ?? (wasFailed ? before.failure_code : null) ?? DEFAULT_FAILURE_CODE;
      failureMessage =
        input.failureMessage ??
        (wasFailed && failureCode === before.failure_code ? before.failure_message : null) ??
        FAILURE_MESSAGES.get(failureCode) ??
        GENERIC_FAILURE_MESSAGE;
    }
    const after = (await client.query<ChargeRow>(SET_STATUS_SQL, [input.chargeId, input.status, failureCode, failureMessage])).rows[0] as ChargeRow;
    return changeOf(input.chargeId, before, after);
  });
}

/**
 * Refunds part or all of what is left of a SUCCEEDED or PARTIALLY_REFUNDED charge: REFUNDED once
 * everything is refunded, PARTIALLY_REFUNDED before. More than what is left is refused.
 */
export async function refundCharge(client: pg.ClientBase, input: RefundChargeInput): Promise<ChargeRefund> {
  return inTransaction(client, async () => {
    const before = await lockCharge(client, input.chargeId);
    if (before.status !== "SUCCEEDED" && before.status !== "PARTIALLY_REFUNDED") {
      throw new CliError(`charge ${input.chargeId} is ${before.status}: only a SUCCEEDED or PARTIALLY_REFUNDED charge can be refunded`, "failed_precondition");
    }
    const refund = toMinorUnits(input.amount, before.currency, "--amount");
    const amount = BigInt(before.amount_minor);
    const refunded = BigInt(before.amount_refunded_minor);
    if (refund > amount - refunded) {
      const left = formatMinorUnits(amount - refunded, before.currency);
      throw new CliError(`--amount ${input.amount.text} is more than the ${left} ${before.currency} left to refund on charge ${input.chargeId}`);
    }
    const after = (
      await client.query<ChargeRow>(
        `UPDATE charges SET amount_refunded_minor = $2::bigint, status = $3::text::charge_status WHERE id = $1
         RETURNING status::text AS status, version::text AS version, currency, amount_minor::text AS amount_minor,
                   amount_refunded_minor::text AS amount_refunded_minor, failure_code, failure_message`,
        [input.chargeId, String(refunded + refund), refunded + refund === amount ? "REFUNDED" : "PARTIALLY_REFUNDED"],
      )
    ).rows[0] as ChargeRow;
    return { ...changeOf(input.chargeId, before, after), refunded: formatMinorUnits(refund, before.currency) };
  });
}

/**
 * Deletes one charge (development only: the app never deletes charges). The database records a
 * charge.deleted event, and sets charge_id to null on orders that named it (an order.updated each).
 */
export async function deleteCharge(client: pg.ClientBase, chargeId: string): Promise<ChargeDeletion> {
  return inTransaction(client, async () => {
    const before = await lockCharge(client, chargeId);
    const orders = await client.query<{ id: string }>("SELECT id FROM orders WHERE charge_id = $1 ORDER BY id FOR UPDATE", [chargeId]);
    await client.query("DELETE FROM charges WHERE id = $1", [chargeId]);
    return {
      id: chargeId,
      previousStatus: before.status,
      status: null,
      previousVersion: Number(before.version),
      version: null,
      changed: true,
      ordersDetached: orders.rows.map((row) => row.id),
    };
  });
}
