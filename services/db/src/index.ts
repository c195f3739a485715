export { migrate } from "./migrate.ts";
export { roleDatabaseUrl, serviceRoles, type ServiceName } from "./roles.ts";
