// @subdata/mirror: keeps a Postgres copy of a merchant's data through the public API (README.md).
export {
  createProgressPrinter,
  DEFAULT_API_KEY_VARIABLE,
  DEFAULT_SCHEMA,
  executeMirror,
  resolveMirrorSettings,
  resultText,
} from "./mirror-command.ts";
export { MirrorError } from "./mirror-error.ts";
export { runMirror, type MirrorOptions, type MirrorProgress } from "./run-mirror.ts";
