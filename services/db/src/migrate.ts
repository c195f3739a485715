import { fileURLToPath } from "node:url";
import { runner } from "node-pg-migrate";
import type pg from "pg";

/**
 * The folder of SQL migrations, resolved from this file so it works from any working directory. The
 * production bundle keeps this relative path true: this code runs from dist/bin/subdata.mjs there, and
 * the build copies the migrations to dist/migrations (deploy/local/src/bundle.ts).
 */
export const migrationsDir = fileURLToPath(new URL("../migrations", import.meta.url));

export type MigrateOptions = (
  | {
      /** A connection string for a user that owns the schema (not a service role). */
      databaseUrl: string;
    }
  | {
      /** A connected client of such a user, which the caller ends (the CLI closes it to stop on SIGTERM). */
      client: pg.ClientBase;
    }
) & {
  /** Receives one line per migration applied; silent by default. */
  log?: (line: string) => void;
};

/**
 * Applies every pending migration, in order, each in its own transaction. node-pg-migrate takes an
 * advisory lock, so concurrent starts (several pods, a Job and a developer) apply each migration once.
 * Returns the names of the migrations applied.
 */
export async function migrate(options: MigrateOptions): Promise<string[]> {
  const log = options.log ?? (() => {});
  const applied = await runner({
    ...("client" in options ? { dbClient: options.client } : { databaseUrl: options.databaseUrl }),
    dir: migrationsDir,
    direction: "up",
    migrationsTable: "pgmigrations",
    checkOrder: true,
    verbose: false,
    log: () => {},
    logger: { debug: () => {}, info: () => {}, warn: log, error: log },
  });
  for (const migration of applied) log(`applied ${migration.name}`);
  return applied.map((migration) => migration.name);
}
