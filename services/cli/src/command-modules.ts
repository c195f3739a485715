import type { RegisterCommands } from "./cli-context.ts";
import { registerAuditCommands } from "./commands/audit.ts";
import { registerChargesCommands } from "./commands/charges.ts";
import { registerCompletionCommand } from "./commands/completion.ts";
import { registerKeysCommands } from "./commands/keys.ts";
import { registerMaintainCommand } from "./commands/maintain.ts";
import { registerMigrateCommand } from "./commands/migrate.ts";
import { registerMirrorCommand } from "./commands/mirror.ts";
import { registerOrdersCommands } from "./commands/orders.ts";
import { registerSeedCommand } from "./commands/seed.ts";
import { registerSubscriptionsCommands } from "./commands/subscriptions.ts";
import { registerWebhooksCommands } from "./commands/webhooks.ts";

/** Every command module, in help order: runCli registers them, tests drive runCli with the same list. */
export const commandModules: readonly RegisterCommands[] = [
  registerMigrateCommand,
  registerSeedCommand,
  registerSubscriptionsCommands,
  registerChargesCommands,
  registerOrdersCommands,
  registerKeysCommands,
  registerWebhooksCommands,
  registerAuditCommands,
  registerMirrorCommand,
  registerMaintainCommand,
  registerCompletionCommand,
];
