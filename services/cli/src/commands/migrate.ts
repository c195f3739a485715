import type { RegisterCommands } from "../cli-context.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";

/** `subdata migrate`: applies pending migrations with DATABASE_URL (an owner connection). */
export const registerMigrateCommand: RegisterCommands = (program, context) => {
  program
    .command("migrate")
    .description("apply pending database migrations (DATABASE_URL must own the schema)")
    .action(async () => {
      const databaseUrl = databaseUrlSetting(context);
      // Loaded on use from sources (node-pg-migrate is the heaviest import and only this command needs
      // it); the bundle (dist/bin/subdata.mjs) has no code splitting, so there it loads at start.
      const { migrate } = await import("@subdata/db");
      // On the CLI's own connection, so that SIGTERM (the migrate Job's pod deleted) closes it: Postgres
      // rolls back the migration in flight and frees node-pg-migrate's advisory lock.
      const applied = await withDatabase(databaseUrl, context.signal, (client) => migrate({ client }));
      context.output.result(
        { applied },
        applied.length === 0 ? "database is up to date: no migration to apply" : applied.map((name) => `applied ${name}`).join("\n"),
      );
    });
};
