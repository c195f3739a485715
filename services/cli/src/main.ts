import type { RegisterCommands } from "./cli-context.ts";
import { registerAuditCommands } from "./commands/audit.ts";
import { registerKeysCommands } from "./commands/keys.ts";
import { registerMigrateCommand } from "./commands/migrate.ts";
import { registerSeedCommand } from "./commands/seed.ts";
import { registerSubscriptionsCommands } from "./commands/subscriptions.ts";
import { registerWebhooksCommands } from "./commands/webhooks.ts";
import { runCli } from "./program.ts";

/** Every command module, in help order. */
const modules: readonly RegisterCommands[] = [
  registerMigrateCommand,
  registerSeedCommand,
  registerSubscriptionsCommands,
  // Added by the auth and webhook work (each file exports its register function under these names).
  registerKeysCommands,
  registerWebhooksCommands,
  registerAuditCommands,
];

process.exitCode = await runCli({
  argv: process.argv,
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  modules,
});
