import { migrate, roleDatabaseUrl, serviceRoles, type ServiceName } from "@subdata/db";
import pg from "pg";
import type { DevSecrets } from "./dev-secrets.ts";

export type RoleDatabaseUrls = Record<ServiceName, string>;

const rolePasswords: Record<ServiceName, keyof DevSecrets> = {
  query: "SUBDATA_QUERY_DB_PASSWORD",
  auth: "SUBDATA_AUTH_DB_PASSWORD",
  webhook: "SUBDATA_WEBHOOK_DB_PASSWORD",
  maintain: "SUBDATA_MAINTAIN_DB_PASSWORD",
  console: "SUBDATA_CONSOLE_DB_PASSWORD",
};

/**
 * Applies pending migrations, then gives each service role that exists the password from the dev
 * secrets (roles are created by migrations, so a role whose migration has not landed yet is
 * skipped). Returns each service's own connection string.
 */
export async function prepareDatabase(
  adminUrl: string,
  secrets: DevSecrets,
  say: (line: string) => void,
): Promise<{ applied: string[]; roleUrls: RoleDatabaseUrls }> {
  const applied = await migrate({ databaseUrl: adminUrl, log: (line) => say(`migrate: ${line}`) });
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    for (const [service, role] of Object.entries(serviceRoles) as Array<[ServiceName, string]>) {
      const exists = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
      if (!exists.rowCount) continue;
      const password = secrets[rolePasswords[service]];
      await client.query(`ALTER ROLE ${client.escapeIdentifier(role)} PASSWORD ${client.escapeLiteral(password)}`);
    }
  } finally {
    await client.end();
  }
  const roleUrls = Object.fromEntries(
    (Object.entries(serviceRoles) as Array<[ServiceName, string]>).map(([service, role]) => [
      service,
      roleDatabaseUrl(adminUrl, role, secrets[rolePasswords[service]]),
    ]),
  ) as RoleDatabaseUrls;
  return { applied, roleUrls };
}

/** True when the demo merchant exists (seeded on an earlier run, or by hand). */
export async function merchantExists(adminUrl: string, merchantId: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const result = await client.query("SELECT 1 FROM merchants WHERE id = $1", [merchantId]);
    return (result.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}
