import {
  type ChargeChange,
  deleteCharge,
  FAILURE_MESSAGES,
  refundCharge,
  SETTABLE_CHARGE_STATUSES,
  type SettableChargeStatus,
  setChargeStatus,
} from "../change-charges.ts";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { parseDecimal } from "../option-parsers.ts";

function parseStatus(text: string): SettableChargeStatus {
  const status = text.toUpperCase();
  if (status === "PARTIALLY_REFUNDED") throw new CliError("STATUS PARTIALLY_REFUNDED needs an amount: use subdata charges refund CHARGE_ID --amount A");
  if (!(SETTABLE_CHARGE_STATUSES as readonly string[]).includes(status)) {
    throw new CliError(`STATUS must be one of ${SETTABLE_CHARGE_STATUSES.join(", ")}, got "${text}"`);
  }
  return status as SettableChargeStatus;
}

/** --failure-code and --failure-message: only with FAILED, never empty, a code without a message only from the catalog. */
function failureOptions(status: SettableChargeStatus, options: { failureCode?: string; failureMessage?: string }) {
  for (const [option, value] of [
    ["--failure-code", options.failureCode],
    ["--failure-message", options.failureMessage],
  ] as const) {
    if (value === undefined) continue;
    if (status !== "FAILED") throw new CliError(`${option} is only for STATUS FAILED`);
    if (value === "") throw new CliError(`${option} must not be empty`);
  }
  if (options.failureCode !== undefined && options.failureMessage === undefined && !FAILURE_MESSAGES.has(options.failureCode)) {
    throw new CliError(
      `--failure-code "${options.failureCode}" has no default message: give --failure-message too (codes with one: ${[...FAILURE_MESSAGES.keys()].join(", ")})`,
    );
  }
  return { failureCode: options.failureCode ?? null, failureMessage: options.failureMessage ?? null };
}

function summary(change: ChargeChange): string {
  if (!change.changed) return `${change.id}: already ${change.status} (nothing changed), version ${change.version}`;
  const status = change.previousStatus === change.status ? `${change.status} (updated)` : `${change.previousStatus} → ${change.status}`;
  return `${change.id}: ${status}, version ${change.version}`;
}

/** `subdata charges …`: stands in for the app in development and tests. */
export const registerChargesCommands: RegisterCommands = (program, context) => {
  const charges = program.command("charges").description("change charges the way the app would (development and tests)");
  charges
    .command("set-status")
    .description(
      "set a charge's status with its consistent side fields (processed_at once processed; failure code and message only when FAILED; " +
        "REFUNDED refunds the whole amount); the database bumps version",
    )
    .argument("<charge-id>", "ch_…")
    .argument("<status>", `${SETTABLE_CHARGE_STATUSES.join(" | ")} (a partial refund: charges refund)`)
    .option("--failure-code <code>", `with FAILED (default: the current code, else ${[...FAILURE_MESSAGES.keys()][0]})`)
    .option("--failure-message <text>", "with FAILED (default: the current message, else the code's own; required for a code the CLI has none for)")
    .action(async (chargeId: string, statusText: string, options: { failureCode?: string; failureMessage?: string }) => {
      const status = parseStatus(statusText);
      const failure = failureOptions(status, options);
      const databaseUrl = databaseUrlSetting(context);
      const change = await withDatabase(databaseUrl, context.signal, (client) => setChargeStatus(client, { chargeId, status, ...failure }));
      context.output.result(change, summary(change));
    });

  charges
    .command("refund")
    .description("refund part or all of what is left of a SUCCEEDED or PARTIALLY_REFUNDED charge (REFUNDED once nothing is left)")
    .argument("<charge-id>", "ch_…")
    .requiredOption("--amount <decimal>", "in the charge's currency, e.g. 5.00; no more decimals than it has, no more than is left")
    .action(async (chargeId: string, options: { amount: string }) => {
      const amount = parseDecimal(options.amount, "--amount", { allowZero: false });
      const databaseUrl = databaseUrlSetting(context);
      const change = await withDatabase(databaseUrl, context.signal, (client) => refundCharge(client, { chargeId, amount }));
      context.output.result(
        change,
        `${change.id}: refunded ${change.refunded} ${change.currency} (${change.amountRefunded} of ${change.amount} in all); ` +
          `${change.previousStatus} → ${change.status}, version ${change.version}`,
      );
    });

  charges
    .command("delete")
    .description(
      "DEVELOPMENT ONLY: hard-delete a charge, which the app never does; the database records charge.deleted, " +
        "and orders that named the charge lose their charge_id (an order.updated each)",
    )
    .argument("<charge-id>", "ch_…")
    .action(async (chargeId: string) => {
      const databaseUrl = databaseUrlSetting(context);
      const deletion = await withDatabase(databaseUrl, context.signal, (client) => deleteCharge(client, chargeId));
      const detached =
        deletion.ordersDetached.length === 0
          ? ""
          : `; ${deletion.ordersDetached.join(", ")} no longer name${deletion.ordersDetached.length === 1 ? "s" : ""} it`;
      context.output.result(deletion, `${deletion.id}: deleted (was ${deletion.previousStatus}, version ${deletion.previousVersion})${detached}`);
    });
};
