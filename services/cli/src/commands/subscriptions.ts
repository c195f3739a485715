import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { SUBSCRIPTION_STATUSES, type SubscriptionStatus } from "../seed/rows.ts";
import { setSubscriptionStatus } from "../set-subscription-status.ts";

function parseStatus(text: string): SubscriptionStatus {
  const status = text.toUpperCase();
  if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(status)) {
    throw new CliError(`STATUS must be one of ${SUBSCRIPTION_STATUSES.join(", ")}, got "${text}"`);
  }
  return status as SubscriptionStatus;
}

/** `subdata subscriptions …`: stands in for the app in development. */
export const registerSubscriptionsCommands: RegisterCommands = (program, context) => {
  const subscriptions = program.command("subscriptions").description("change subscriptions the way the app would");
  subscriptions
    .command("set-status")
    .description("set a subscription's status with its consistent side fields; the database bumps version")
    .argument("<subscription-id>", "sub_…")
    .argument("<status>", SUBSCRIPTION_STATUSES.join(" | "))
    .option("--reason <text>", "cancellation reason (only with CANCELLED)")
    .action(async (subscriptionId: string, statusText: string, options: { reason?: string }) => {
      const status = parseStatus(statusText);
      if (options.reason !== undefined && status !== "CANCELLED") throw new CliError("--reason is only for STATUS CANCELLED");
      const databaseUrl = databaseUrlSetting(context);
      const change = await withDatabase(databaseUrl, context.signal, (client) =>
        setSubscriptionStatus(client, { subscriptionId, status, reason: options.reason ?? null }),
      );
      context.output.result(
        change,
        change.changed
          ? `${change.id}: ${change.previousStatus} → ${change.status}, version ${change.version}`
          : `${change.id}: already ${change.status} (nothing changed), version ${change.version}`,
      );
    });
};
