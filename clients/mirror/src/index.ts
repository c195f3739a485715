// @subdata/mirror: keeps a Postgres copy of a merchant's data through the public API (README.md).
export {
  createProgressPrinter,
  DEFAULT_API_KEY_VARIABLE,
  DEFAULT_SCHEMA,
  executeMirror,
  fromEnvironment,
  resolveMirrorSettings,
  resultText,
  withStopSignals,
  type ExecuteOptions,
  type MirrorArguments,
  type MirrorSettings,
} from "./mirror-command.ts";
export { MirrorError, toMirrorError } from "./mirror-error.ts";
export { runMirror, type MirrorOptions, type MirrorProgress, type MirrorResult } from "./run-mirror.ts";
export { RESOURCES, TABLES, type Column, type Resource, type TableName } from "./tables.ts";
export { prepareTargetSchema, SCHEMA_NAME } from "./target-schema.ts";
