// The launcher's pieces the benchmark reuses to run the same stack: the process table, spawning, readiness, log lines, ports.
export type { DevSecrets } from "./dev-secrets.ts";
export { formatLogLine, prefixLines } from "./log-line.ts";
export { spawnManaged, type ManagedProcess } from "./managed-process.ts";
export { buildProcessTable, childEnvironment, stackUrls, type ProcessSpec } from "./process-table.ts";
export { grpcHealthServing, httpAnswers, waitFor } from "./readiness.ts";
export { BENCH_PORT_BLOCK, createPortPicker } from "./port-picker.ts";
// The bundles (`npm run build`) the image, the bench and `npm run start:bundled` run, and the V8 flags every process runs with.
export {
  BUNDLE_ENTRIES,
  BUNDLE_NODE_FLAGS,
  type BuildResult,
  type BundleName,
  buildBundles,
  bundleNameFor,
  bundleNodeArgs,
  bundlePathFor,
} from "./bundle.ts";
export { COMMAND_LINE_FLAGS, MALLOC_TUNABLES, NODE_OPTIONS_FLAGS } from "./node-flags.ts";
// The variables deploy/compose.yaml needs, as `npm run compose:env` writes them.
export { composeEnvironment } from "./compose-env.ts";
