import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { runner } from "node-pg-migrate";
import pg from "pg";
import { inject } from "vitest";
import { migrationsDir } from "../../services/db/src/migrate.ts";

/** A fresh database migrated up to, not including, one migration: for tests of what that migration does to existing rows. */
export interface DatabaseBefore {
  /** Superuser connection string. */
  url: string;
  /** The connection string of a service role (its grants come from the migrations). */
  roleUrl(role: "query" | "auth" | "webhook"): string;
  /** Superuser client on it, connected. */
  db: pg.Client;
  drop(): Promise<void>;
}

export async function createDatabaseBefore(migration: string): Promise<DatabaseBefore> {
  const name = `subdata_before_${migration.slice(0, 17)}_${randomBytes(4).toString("hex")}`;
  const withDatabase = (url: string) => Object.assign(new URL(url), { pathname: `/${name}` }).toString();
  const server = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  await server.connect();
  try {
    await server.query(`CREATE DATABASE ${name}`);
  } finally {
    await server.end();
  }
  const url = withDatabase(inject("adminDatabaseUrl"));
  const count = readdirSync(migrationsDir).filter((file) => file.endsWith(".sql") && file < migration).length;
  await runner({ databaseUrl: url, dir: migrationsDir, direction: "up", count, migrationsTable: "pgmigrations", log: () => {} });
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  return {
    url,
    roleUrl: (role) => withDatabase(inject("roleDatabaseUrls")[role]),
    db,
    async drop() {
      await db.end();
      const cleanup = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
      await cleanup.connect();
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}
