export { migrate, migrationsDir, type MigrateOptions } from "./migrate.ts";
export { roleDatabaseUrl, serviceRoles, type ServiceName } from "./roles.ts";
