import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

/**
 * A database of its own for one test (or one file): a copy of the run's migrated template
 * (test/global-setup.ts), made in a fraction of a second. Tests that run a relay, a delivery pipeline or
 * a command that works on every row of its database use one, so what they claim is only what they
 * made; the run's shared database stays for everything scoped by merchant.
 */
export interface TestDatabase {
  name: string;
  /** Superuser connection (fixtures and assertions). */
  adminUrl: string;
  /** Each service role's connection to this database. */
  roleUrls: { query: string; auth: string; webhook: string; maintain: string; console: string };
  /** Drops the database; end every pool on it first. */
  drop(): Promise<void>;
}

/** The same server and credentials, another database. */
function withDatabase(url: string, database: string): string {
  const copy = new URL(url);
  copy.pathname = `/${database}`;
  return copy.toString();
}

/** One statement on the run's database, on a connection of its own that is closed right after. */
async function onServer<T extends pg.QueryResultRow>(statement: string, values: unknown[] = []): Promise<pg.QueryResult<T>> {
  const client = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  // A connection Postgres ends while idle (57P01) must not become an uncaught error of the file.
  client.on("error", () => {});
  await client.connect();
  try {
    return await client.query<T>(statement, values);
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(tag: string): Promise<TestDatabase> {
  const template = inject("templateDatabaseName");
  const name = `${template.replace(/_template$/, "")}_${tag
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .slice(0, 16)}_${randomBytes(3).toString("hex")}`;
  await onServer(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  const roles = inject("roleDatabaseUrls");
  return {
    name,
    adminUrl: withDatabase(inject("adminDatabaseUrl"), name),
    roleUrls: {
      query: withDatabase(roles.query, name),
      auth: withDatabase(roles.auth, name),
      webhook: withDatabase(roles.webhook, name),
      maintain: withDatabase(roles.maintain, name),
      console: withDatabase(roles.console, name),
    },
    async drop() {
      // Sessions that are still closing are let go first: terminating one would surface as 57P01 on its client.
      for (let tries = 0; tries < 100; tries++) {
        const { rows } = await onServer<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1", [name]);
        if (rows[0]?.n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
