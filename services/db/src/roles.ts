/**
 * The database roles of subdata's processes. Each connects as its own role with only the privileges it
 * needs; the migrations create the roles (when missing) and grant them. `maintain` is the retention
 * task's (`subdata maintain`): it may call the partition and purge functions and nothing else. `console`
 * is the console page's: its sessions and change records, and merchants' ids.
 */
export const serviceRoles = {
  query: "subdata_query",
  auth: "subdata_auth",
  webhook: "subdata_webhook",
  maintain: "subdata_maintain",
  console: "subdata_console",
} as const;

export type ServiceName = keyof typeof serviceRoles;

/** The connection string for `role`, taken from an admin connection string (same host and database). */
export function roleDatabaseUrl(adminUrl: string, role: string, password?: string): string {
  const url = new URL(adminUrl);
  url.username = role;
  url.password = password ?? "";
  return url.toString();
}
