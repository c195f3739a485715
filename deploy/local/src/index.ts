// The launcher's pieces the benchmark reuses to run the same stack: the process table, spawning, readiness, log lines.
export type { DevSecrets } from "./dev-secrets.ts";
export { formatLogLine, prefixLines } from "./log-line.ts";
export { spawnManaged, type ManagedProcess } from "./managed-process.ts";
export { buildProcessTable, childEnvironment, stackUrls, type ProcessSpec } from "./process-table.ts";
export { grpcHealthServing, httpAnswers, waitFor } from "./readiness.ts";
